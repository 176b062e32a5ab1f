// Package examples_test replays IL-0587 with the example clients in place
// of the scenario's own, the way a user's CI would: one gentle client
// that must hold, one TreeCache that must be caught.
package examples_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

const scenario = "il-0587-zk-treecache-reconnect-storm"

// python finds a python3 with kazoo (Debian's python3-kazoo).
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(p, "-c", "import kazoo").Run(); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no python3 with kazoo: scripts/setup.sh installs python3-kazoo")
	}
	t.Skip("no python3 with kazoo (apt-get install python3-kazoo)")
	return ""
}

// pacedBinary builds the Go example, a module of its own.
func pacedBinary(t *testing.T) string { return goExample(t, "zk-paced-go", "zk-paced") }

// goExample builds the Go example in dir (a module of its own) as name.
func goExample(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-C", dir, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build examples/%s: %s", dir, out)
	return bin
}

// recorder is a labtest.T that keeps the failures instead of failing.
type recorder struct {
	*testing.T
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// requireCaught: a program run with its expectation (held) was caught,
// labtest.Run failing the test once with the hypothesis that broke.
func requireCaught(t *testing.T, rec *recorder, r *reports.Report, hypothesis string) *reports.VariantResult {
	t.Helper()
	require.NotNil(t, r)
	t.Log(reports.Summary(r))
	require.Len(t, rec.errs, 1, "labtest.Run fails the test")
	require.Contains(t, rec.errs[0], hypothesis)
	require.Equal(t, verdict.Violated, r.Verdict)
	v := r.Variants[0]
	require.Equal(t, verdict.Held, v.Expect)
	return v
}

// TestIntegration_TreeCacheIsCaught: kazoo's TreeCache, printing nothing
// (judged from the outside alone: its process and what the servers see of
// it), fails a CI that runs it under the incident's timeline, and the
// failure names the refresh storm.
func TestIntegration_TreeCacheIsCaught(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	py := python(t)
	rec := &recorder{T: t}
	r := labtest.Run(rec, scenario, labtest.Client(py, "zk-treecache-python/treecache.py"),
		labtest.ClientEnv("CHAOSLAB_EXAMPLE_QUIET", "1"), labtest.Seed(1), labtest.Size("ci"))
	v := requireCaught(t, rec, r, "did not meet its expectation")
	// From the outside: the refresh storm past its threshold (0.35; a
	// CI run measured 0.687, so it is not held to 2x), each client's
	// backlog at the servers 2x past its 40 (237 in that run), the
	// servers' queues filled (the evidence row's 150, 2x).
	require.Greater(t, float64(v.Metrics["clients.requests_per_znode_per_reconnect"]), 0.35)
	require.GreaterOrEqual(t, float64(v.Metrics["clients.server_outstanding.max_from_fault"]), 80.0)
	require.GreaterOrEqual(t, float64(v.Metrics["servers.outstanding_requests.max_from_fault"]), 300.0)
	for _, h := range v.Hypotheses {
		if h.ID == "mirrors-fresh-after-fault" {
			require.True(t, h.Missing && h.Optional, "a quiet client reports no freshness: %s", h.String())
		}
	}
	require.Contains(t, rec.errs[0], "no-refresh-storm")
}

// TestIntegration_PacedHoldsInCI: the Go example through the CLI as a CI
// job would call it, at the scenario's ci size, with JUnit XML that a
// JUnit reader accepts.
func TestIntegration_PacedHoldsInCI(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	py := python(t)
	client := pacedBinary(t)
	bin, err := labtest.ChaoslabBinary()
	require.NoError(t, err)
	out, junit := t.TempDir(), filepath.Join(t.TempDir(), "junit.xml")
	cmd := exec.Command(bin, "run", scenario, "--size", "ci", "--client", client, "--client-name", "zk-paced",
		"--seed", "1", "--junit", junit, "--json", "--out", out)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &testWriter{t}
	require.NoError(t, cmd.Run(), "chaoslab run exits 0 when the client holds every run")

	var runs []struct {
		Seed           int64  `json:"seed"`
		Verdict        string `json:"verdict"`
		ExpectationMet bool   `json:"expectation_met"`
		Report         string `json:"report"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &runs), stdout.String())
	require.Len(t, runs, 1)
	for i, run := range runs {
		require.Equal(t, int64(1+i), run.Seed)
		require.Equal(t, "held", run.Verdict)
		require.True(t, run.ExpectationMet)
		r, err := reports.Load(filepath.Join(filepath.Dir(run.Report), "report.json"))
		require.NoError(t, err)
		v := r.Variants[0]
		// 2x inside the thresholds (0.35 and 40). The requests counted are
		// those beyond the client's steady watch traffic before the fault
		// (at most 0.024 in 5 runs here; with the steady traffic counted, a
		// CI runner saw 0.179).
		require.LessOrEqual(t, float64(v.Metrics["clients.requests_per_znode_per_reconnect"]), 0.175)
		require.LessOrEqual(t, float64(v.Metrics["clients.server_outstanding.max_from_fault"]), 20.0)
		require.Zero(t, float64(v.Metrics["clients.oom_kills"]))
	}
	// A JUnit reader takes the file: every case passed.
	check := `import sys; from junitparser import JUnitXml
x = JUnitXml.fromfile(sys.argv[1])
cases = [c for s in x for c in s]
bad = [c.name for c in cases if c.result]
print(len(cases), "cases", len(bad), "failed")
sys.exit(1 if bad or not cases else 0)`
	got, err := exec.Command(py, "-c", check, junit).CombinedOutput()
	require.NoError(t, err, "junitparser: %s", got)
	t.Logf("junitparser: %s", strings.TrimSpace(string(got)))
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestIntegration_ExecReaderHolds: the exec workload kind, any program
// against any system, with a kazoo reader whose counters are scraped from
// the Prometheus endpoint it prints (examples/exec-leader-stall.yaml).
func TestIntegration_ExecReaderHolds(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	python(t)
	t.Chdir("..") // the scenario names its command from the repository's root
	r := labtest.Run(t, "examples/exec-leader-stall.yaml", labtest.Seed(1))
	require.NotNil(t, r)
	t.Log(reports.Summary(r))
	v := r.Variants[0]
	require.Equal(t, verdict.Held, v.Verdict)
	require.Zero(t, float64(v.Metrics["clients.deaths"]))
	require.LessOrEqual(t, float64(v.Metrics["clients.requests_per_s.max_from_fault"]), 50.0, "2x from the threshold")
	require.GreaterOrEqual(t, float64(v.Metrics["max(client.reads_total)@after-faults"]), 200.0, "2x from the threshold (scraped)")
	require.NotEmpty(t, v.Series, "the figures it printed and served are in the report")
	var printed bool
	for _, s := range v.Series {
		printed = printed || s.Name == "client.connected"
	}
	require.True(t, printed, "client.connected, from its JSON lines")
}
