package zkcheck

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServingAndTruncate(t *testing.T) {
	for _, s := range []string{StateLeader, StateFollower, StateObserver, StateStandalone} {
		require.True(t, Serving(s))
	}
	require.False(t, Serving("looking"))
	require.Equal(t, "abc", Truncate("abc", 3))
	require.Equal(t, "ab...", Truncate("abc", 2))
}

func TestEnsembleRules(t *testing.T) {
	states := map[string]string{"a": StateFollower, "b": StateLeader, "c": StateFollower}
	e := Ensemble[string]{
		Members:  func() []string { return []string{"a", "b", "c"} },
		Name:     func(m string) string { return m },
		ID:       func(m string) int { return int(m[0]) },
		RunState: func(context.Context, string) (bool, bool) { return true, false },
		Mntr: func(_ context.Context, m string) (map[string]string, error) {
			return map[string]string{"zk_server_state": states[m]}, nil
		},
	}
	l, err := e.Leader(context.Background())
	require.NoError(t, err)
	require.Equal(t, "b", l)
	fs, err := e.Followers(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "c"}, fs)
	_, err = e.WaitHealthy(context.Background())
	require.NoError(t, err)

	states["c"] = StateLeader
	_, bad, prob := e.Health(e.Poll(context.Background()))
	require.Equal(t, []string{"b", "c"}, bad)
	require.True(t, strings.Contains(prob, "two leaders b and c"), prob)
}
