package runner

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/scenarios"
)

func withFault(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	src, err := scenarios.ReadBuiltin("il-0587-zk-treecache-reconnect-storm.yaml")
	require.NoError(t, err)
	s, err := scenarios.Parse("x.yaml", []byte(strings.Replace(string(src), "fault: pause", "fault: "+name, 1)))
	require.NoError(t, err)
	return s
}

// Container-only faults are refused on the local backend before anything
// starts; every fault is accepted on the docker backend.
func TestPreflight(t *testing.T) {
	for _, f := range []string{"pause", "kill-restart"} {
		require.NoError(t, preflight(localBackend{}, withFault(t, f)), f)
	}
	for _, f := range []string{"cpu-throttle", "replace", "disconnect"} {
		err := preflight(localBackend{}, withFault(t, f))
		require.ErrorContains(t, err, "timeline.faults[0] "+f+" on the local backend", f)
	}
	for _, f := range []string{"pause", "kill-restart", "cpu-throttle", "replace", "disconnect"} {
		require.NoError(t, preflight(dockerBackend{}, withFault(t, f)), f)
	}
}

func TestUnknownBackend(t *testing.T) {
	_, _, err := chooseBackend(t.Context(), "kubernetes", nil, Options{})
	require.ErrorContains(t, err, `unknown backend "kubernetes"`)
}
