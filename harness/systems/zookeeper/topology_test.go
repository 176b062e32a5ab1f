package zookeeper

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

func problems(ps []lab.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Field + ": " + p.Msg + "\n")
	}
	return b.String()
}

func TestTopologyDefaults(t *testing.T) {
	topo := System{}.NewTopology().(*Topology)
	require.Equal(t, 0, topo.Observers, "no observers unless asked")
	require.Equal(t, 10, topo.InitLimit)
	require.Equal(t, 5, topo.SyncLimit)
	require.Empty(t, topo.Check())
	require.Equal(t, "3 ZooKeeper servers, tickTime 2000 ms, initLimit 10, syncLimit 5", topo.Facts()[0].Value)
}

func TestTopologyObservers(t *testing.T) {
	topo := System{}.NewTopology().(*Topology)
	topo.Observers = 2
	require.Empty(t, topo.Check())
	require.Contains(t, topo.Facts()[0].Value, "3 ZooKeeper servers and 2 observers")

	topo.Observers = MaxObservers + 1
	require.Contains(t, problems(topo.Check()), "observers: want 0 to 5")
	topo.Observers = -1
	require.Contains(t, problems(topo.Check()), "observers: want 0 to 5")
	topo.Observers, topo.Servers = 1, 1
	require.Contains(t, problems(topo.Check()), "observers: 1 observers need at least 2 servers")
}
