package lab

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"mitigated", "window-64", "il-0587-zk"} {
		require.Empty(t, CheckName(ok, 32), ok)
	}
	for name, want := range map[string]string{
		"":          "want a name",
		"../escape": "no /, no ..",
		"Mitigated": "lower-case",
		"two words": "no spaces",
		"-leading":  "starting with a letter or a digit",
	} {
		require.Contains(t, CheckName(name, 32), want, name)
	}
	require.Contains(t, CheckName("a-very-long-name", 8), "more than 8")
}

func TestCheckLabelAndEnv(t *testing.T) {
	require.Empty(t, CheckLabel("My client 2"))
	require.Contains(t, CheckLabel("../x"), "no / or \\")
	require.Contains(t, CheckLabel(".."), "not . or ..")
	require.Contains(t, CheckLabel("a\x01"), "control characters")
	require.Empty(t, CheckEnvName("ZK_HOSTS"))
	require.Contains(t, CheckEnvName("A=B"), "not an environment variable's name")
	require.Contains(t, CheckEnvName("1A"), "not an environment variable's name")
}

func TestCheckCPUsAndDuration(t *testing.T) {
	require.Empty(t, CheckCPUs(0, true))
	require.Contains(t, CheckCPUs(0, false), "below 0.01 CPUs")
	require.Contains(t, CheckCPUs(0.001, true), "below 0.01 CPUs")
	require.Contains(t, CheckCPUs(float64(CPUs())+1, true), "CPUs of this machine")
	require.Empty(t, CheckCPUs(0.5, false))
	require.Contains(t, CheckDuration(Duration(-time.Second), 0, ""), "negative")
	require.Contains(t, CheckDuration(Duration(time.Millisecond), time.Second, "why"), "below 1s, why")
	require.Contains(t, CheckDuration(Duration(25*time.Hour), 0, ""), "more than 24h")
	require.Empty(t, CheckDuration(Duration(time.Minute), time.Second, ""))
}
