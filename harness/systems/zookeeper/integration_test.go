package zookeeper_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
	"github.com/chaoslab/chaoslab/harness/tier"
)

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// events collects a variant's timeline.
type events struct {
	mu  sync.Mutex
	all []lab.Event
}

func (e *events) add(ev lab.Event) { e.mu.Lock(); defer e.mu.Unlock(); e.all = append(e.all, ev) }

func (e *events) text() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.all {
		fmt.Fprintf(&b, "%s %s: %s\n", ev.Kind, ev.Source, ev.Detail)
	}
	return b.String()
}

// startLocal starts the topology on the local placement through the
// System interface.
func startLocal(t *testing.T, ctx context.Context, topo *zookeeper.Topology) (lab.Cluster, *lab.Env, *events) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts real ZooKeeper servers (skipped with -short)")
	}
	log := labtest.Logger(t)
	sys, err := lab.GetSystem(zookeeper.Name)
	require.NoError(t, err)
	plc := labtest.LocalPlacement(t, ctx, log)
	require.NoError(t, sys.Prepare(ctx, plc, log))
	dir := t.TempDir()
	runID := "zk-replace-test-" + time.Now().Format("150405")
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	evs := &events{}
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log, OnEvent: evs.add}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	began := time.Now()
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	t.Logf("TIMING %d servers + %d observers healthy in %s", topo.Servers, topo.Observers, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		require.NoError(t, site.Close())
		labtest.NoProcessNaming(t, dir)
		labtest.NoCgroups(t, runID)
	})
	return c, env, evs
}

// seed writes n znodes of 1 KiB under /replace, so that a fresh member
// has a snapshot to receive.
func seed(t *testing.T, servers []string, n int) {
	t.Helper()
	c, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(nopLogger{}))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Create("/replace", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	data := make([]byte, 1024)
	for i := 0; i < n; i += 100 {
		var ops []any
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/replace/n%05d", j), Data: data, Acl: zk.WorldACL(zk.PermAll)})
		}
		_, err := c.Multi(ops...)
		require.NoError(t, err)
	}
}

func roles(t *testing.T, ctx context.Context, c lab.Cluster) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range c.Members() {
		r, err := m.Role(ctx)
		require.NoError(t, err, m.Name())
		out[m.Name()] = r
	}
	return out
}

func countRoles(rs map[string]string) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		out[r]++
	}
	return out
}

func resolve(t *testing.T, ctx context.Context, c lab.Cluster, env *lab.Env, selector string) []lab.Target {
	t.Helper()
	sel, err := lab.ParseSelector(selector, zookeeper.System{}.Roles(), nil)
	require.NoError(t, err)
	ts, err := sel.Resolve(ctx, c, nil, nil, env.Rand(1))
	require.NoError(t, err)
	return ts
}

// A 3-voter + 2-observer ensemble on local processes: the observers are
// observers (and targets by role and by name); a voter replaced with an
// empty data dir passes a deep gate once synced, a shallow gate long
// before; an observer replaced the same way syncs too; a deep gate that
// cannot pass in time stops the procedure.
func TestIntegration_ReplaceMemberDeepGate(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0277 (the mitigated procedure's deep gates)")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := zookeeper.System{}.NewTopology().(*zookeeper.Topology)
	topo.Observers = 2
	c, env, evs := startLocal(t, ctx, topo)

	rs := roles(t, ctx, c)
	require.Equal(t, map[string]int{lab.RoleLeader: 1, lab.RoleFollower: 2, lab.RoleObserver: 2}, countRoles(rs), rs)
	require.Equal(t, lab.RoleObserver, rs["zk4"])
	require.Equal(t, lab.RoleObserver, rs["zk5"])
	obs := resolve(t, ctx, c, env, "observers")
	require.Len(t, obs, 2)
	require.ElementsMatch(t, []string{"zk4", "zk5"}, []string{obs[0].Name(), obs[1].Name()})
	require.Equal(t, "zk4", resolve(t, ctx, c, env, "member:zk4")[0].Name())
	require.Len(t, c.Endpoints(lab.FromHost), 5)

	seed(t, c.Endpoints(lab.FromHost), 3000)

	build := func(gate string, timeout time.Duration, onTimeout string) *faults.Replace {
		f := faults.MustNew("replace").(*faults.Replace)
		f.Gate, f.GateTimeout, f.OnTimeout = gate, lab.Duration(timeout), onTimeout
		return f
	}
	replace := func(target lab.Target, gate string, timeout time.Duration, onTimeout string) (time.Duration, error) {
		f := build(gate, timeout, onTimeout)
		require.Empty(t, f.Check())
		require.NoError(t, f.Available(target))
		began := time.Now()
		err := f.Inject(ctx, target, 0)
		return time.Since(began), err
	}

	// A voter with the deep gate: synced when it returns.
	voter := resolve(t, ctx, c, env, "follower")[0]
	took, err := replace(voter, faults.GateDeep, 45*time.Second, faults.OnTimeoutStop)
	require.NoError(t, err, evs.text())
	t.Logf("TIMING replace %s (voter, 3000 znodes of 1 KiB) until the deep gate passed: %s", voter.Name(), took.Round(time.Millisecond))
	require.Contains(t, evs.text(), "gate "+voter.Name()+": deep gate passed by "+voter.Name())
	require.Equal(t, lab.RoleFollower, roles(t, ctx, c)[voter.Name()])
	require.NoError(t, voter.(faults.Gater).GateCheck(ctx, faults.GateDeep), "the replaced voter stays synced")
	requireNodes(t, ctx, voter, 3000)
	log, err := os.ReadFile(filepath.Join(env.Dir, "logs", voter.Name()+".log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "Getting a snapshot from leader", "an empty member syncs a whole snapshot")

	// An observer with the deep gate.
	took, err = replace(obs[0], faults.GateDeep, 45*time.Second, faults.OnTimeoutStop)
	require.NoError(t, err, evs.text())
	t.Logf("TIMING replace %s (observer) until the deep gate passed: %s", obs[0].Name(), took.Round(time.Millisecond))
	require.Equal(t, lab.RoleObserver, roles(t, ctx, c)[obs[0].Name()])
	requireNodes(t, ctx, obs[0], 3000)

	// The shallow gate passes as soon as the JVM answers, synced or not.
	took, err = replace(voter, faults.GateShallow, 45*time.Second, faults.OnTimeoutStop)
	require.NoError(t, err)
	t.Logf("TIMING replace %s until the shallow gate passed: %s", voter.Name(), took.Round(time.Millisecond))
	require.NoError(t, c.WaitHealthy(ctx))

	// A deep gate that cannot pass in 100 ms stops the procedure: a
	// replaced member's JVM alone takes 0.3 s or more to answer, and its
	// sync longer (a CI runner passed a 1 s deep gate in 0.9 s).
	// (Below the 1 s a scenario may ask for, so built here without Check.)
	short := build(faults.GateDeep, 100*time.Millisecond, faults.OnTimeoutStop)
	require.NoError(t, short.Available(voter))
	err = short.Inject(ctx, voter, 0)
	require.ErrorIs(t, err, lab.ErrStopTimeline)
	require.Contains(t, evs.text(), "deep gate NOT passed by "+voter.Name()+" within 100ms")
	require.NoError(t, c.WaitHealthy(ctx))
	logs := logCounts(t, ctx, c)
	require.Zero(t, logs[zookeeper.SeriesNotSynced], "replacing one voter at a time keeps a quorum")

	// The leader left without followers shuts down, as in the incident, and
	// says so in its log; a new leader is elected once they are back.
	followers := resolve(t, ctx, c, env, "followers")
	require.Len(t, followers, 2)
	for _, f := range followers {
		require.NoError(t, f.Kill())
	}
	require.Eventually(t, func() bool { return logCounts(t, ctx, c)[zookeeper.SeriesNotSynced] >= 1 },
		20*time.Second, 500*time.Millisecond, "the leader logs Not sufficient followers synced")
	for _, f := range followers {
		require.NoError(t, f.Restart(ctx))
	}
	require.NoError(t, c.WaitHealthy(ctx))
	require.Eventually(t, func() bool { return logCounts(t, ctx, c)[zookeeper.SeriesElections] >= 1 },
		10*time.Second, 500*time.Millisecond, "a leader elected again")
	t.Logf("log counts after the followers' loss: %v", logCounts(t, ctx, c))
}

// logCounts is the latest sample of the servers' logs.
func logCounts(t *testing.T, ctx context.Context, c lab.Cluster) map[string]float64 {
	t.Helper()
	for _, s := range c.Sample(ctx) {
		if s.Member == "ensemble" {
			return s.Values
		}
	}
	t.Fatal("no sample of the servers' logs")
	return nil
}

// requireNodes checks the member holds the seeded tree (mntr's
// zk_znode_count).
func requireNodes(t *testing.T, ctx context.Context, m lab.Target, atLeast int) {
	t.Helper()
	kv, err := m.(interface {
		Mntr(context.Context) (map[string]string, error)
	}).Mntr(ctx)
	require.NoError(t, err, m.Name())
	n, err := strconv.Atoi(kv["zk_znode_count"])
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, atLeast, m.Name())
}
