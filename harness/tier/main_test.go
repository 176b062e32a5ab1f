package tier

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The helper mode: TestMain as a package with integration tests has it,
// its need and its build given by the environment.
func TestMain(m *testing.M) {
	if os.Getenv("TIER_HELPER") == "" {
		os.Exit(m.Run())
	}
	d, _ := time.ParseDuration(os.Getenv("TIER_HELPER_NEED"))
	Needs(d)
	Main(m, func() { time.Sleep(time.Second) }) // a build
}

// TestIntegration_Helper says it ran (in the helper mode only).
func TestIntegration_Helper(t *testing.T) {
	if os.Getenv("TIER_HELPER") == "" {
		t.Skip("run by TestMainSkipsIntegrationTestsWithoutTime")
	}
	os.Stdout.WriteString("integration test ran\n")
}

// A package whose integration tests need more than is left before the go
// command would kill it (-timeout and a minute, the wait for the lock and
// the builds counted) skips them and says why; one with time enough runs
// them; without -timeout they always run.
func TestMainSkipsIntegrationTestsWithoutTime(t *testing.T) {
	lockFile := filepath.Join(t.TempDir(), "lock")
	run := func(need string, args ...string) string {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run", "^TestIntegration_Helper$", "-test.v"}, args...)...)
		cmd.Env = append(os.Environ(), "TIER_HELPER=1", "TIER_HELPER_NEED="+need, "CHAOSLAB_INTEGRATION_LOCK="+lockFile)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	out := run("30s", "-test.timeout", "10s") // 70 s less the build's 1 s
	require.Contains(t, out, "integration test ran")
	out = run("2m", "-test.timeout", "30s")
	require.NotContains(t, out, "integration test ran")
	require.Contains(t, out, "tier: integration tests skipped: this package's need about 2m0s, and once it built the server binaries, 1m")
	require.Contains(t, out, "run the package alone, or with -timeout 60m")
	// Another package's integration tests hold the lock: the wait eats
	// the time, and the helper gives up rather than start late.
	release, err := lock(lockFile, time.Time{}, false)
	require.NoError(t, err)
	out = run("69s", "-test.timeout", "10s")
	release()
	require.NotContains(t, out, "integration test ran")
	require.Contains(t, out, "once it waited for other packages' integration tests")
	out = run("2h", "-test.timeout", "0")
	require.Contains(t, out, "integration test ran")
}
