package zookeeper_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)

var confInitLimit = regexp.MustCompile(`(?m)^initLimit=(\d+)$`)

// runningInitLimit is the initLimit the running server reports (4lw conf),
// not its file's.
func runningInitLimit(t *testing.T, ctx context.Context, m any) string {
	t.Helper()
	fl, ok := m.(interface {
		FourLetter(ctx context.Context, cmd string) (string, error)
	})
	require.True(t, ok, "a local member answers four-letter words")
	out, err := fl.FourLetter(ctx, "conf")
	require.NoError(t, err)
	g := confInitLimit.FindStringSubmatch(out)
	require.NotNil(t, g, out)
	return g[1]
}

// raise-init-limit on a real observer (local ensemble of 3 voters and 1
// observer at initLimit 2): its zoo.cfg is rewritten, it is restarted, the
// running server reports the new initLimit, it observes again, synced,
// and the timeline says how long that took; the voters keep theirs.
func TestIntegration_RaiseInitLimitRestartsObserver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := zookeeper.System{}.NewTopology().(*zookeeper.Topology)
	topo.Observers, topo.InitLimit = 1, 2
	c, env, evs := startLocal(t, ctx, topo)
	obs := resolve(t, ctx, c, env, "observers")
	require.Len(t, obs, 1)
	require.Equal(t, "2", runningInitLimit(t, ctx, obs[0]))

	f := faults.MustNew("raise-init-limit").(*zookeeper.RaiseInitLimit)
	require.Equal(t, 30, f.Ticks)
	require.NoError(t, f.Available(obs[0]))
	require.NoError(t, f.Inject(ctx, obs[0], 20*time.Second))
	require.Equal(t, "30", runningInitLimit(t, ctx, obs[0]))
	require.Equal(t, "observer", roles(t, ctx, c)["zk4"])
	require.Regexp(t, `init-limit zk4: initLimit 30 ticks \(was 2\); restarted, serving after [0-9.]+s; synced with the leader after [0-9.]+s`, evs.text())
	for _, m := range resolve(t, ctx, c, env, "followers") {
		require.Equal(t, "2", runningInitLimit(t, ctx, m), m.Name())
	}
}
