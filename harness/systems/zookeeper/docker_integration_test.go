package zookeeper_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)

// startDocker starts the topology on the docker placement through the
// System interface, skipping where no engine or image is here.
func startDocker(t *testing.T, ctx context.Context, topo *zookeeper.Topology) (lab.Cluster, *lab.Env, *events) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts real ZooKeeper containers (skipped with -short)")
	}
	log := labtest.Logger(t)
	sys, err := lab.GetSystem(zookeeper.Name)
	require.NoError(t, err)
	newPlacement, err := lab.GetPlacement("docker")
	require.NoError(t, err)
	plc, err := newPlacement(lab.PlacementOptions{Log: log})
	require.NoError(t, err)
	if err := plc.Available(ctx); err != nil {
		t.Skipf("docker placement: %v", err)
	}
	if err := plc.Prepare(ctx, topo.Images()); err != nil {
		t.Skipf("docker placement cannot run zookeeper here: %v", err)
	}
	dir := t.TempDir()
	runID := "zk-observers-docker-" + time.Now().Format("150405")
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	evs := &events{}
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log, OnEvent: evs.add}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	began := time.Now()
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	t.Logf("TIMING %d servers + %d observers (containers) healthy in %s", topo.Servers, topo.Observers, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		require.NoError(t, site.Close())
		left, err := docker.Leftovers(context.Background(), runID)
		require.NoError(t, err)
		require.Empty(t, left, "containers or networks left")
	})
	return c, env, evs
}

// inspect reads one field of a container from the engine.
func inspect(t *testing.T, format, name string) string {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", format, name).CombinedOutput()
	require.NoError(t, err, "docker inspect %s: %s", name, out)
	return strings.TrimSpace(string(out))
}

// A 3-voter + 2-observer ensemble in containers: the observers are
// observers (peerType=observer); every server is held to its CPU share
// (NanoCPUs), and a replaced one starts under it again with the same id
// and alias and an empty data dir; a replaced observer passes the deep
// gate once synced, a replaced voter the shallow gate before; the leader
// left without followers logs "Not sufficient followers synced" in the
// containers' output, and the election that follows is counted.
func TestIntegration_ObserversOnDocker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topo := zookeeper.System{}.NewTopology().(*zookeeper.Topology)
	topo.Observers, topo.HeapMB, topo.CPUQuota = 2, 128, 0.5
	c, env, evs := startDocker(t, ctx, topo)

	rs := roles(t, ctx, c)
	require.Equal(t, map[string]int{lab.RoleLeader: 1, lab.RoleFollower: 2, lab.RoleObserver: 2}, countRoles(rs), rs)
	obs := resolve(t, ctx, c, env, "observers")
	require.ElementsMatch(t, []string{"zk4", "zk5"}, []string{obs[0].Name(), obs[1].Name()})
	require.Len(t, c.Endpoints(lab.FromHost), 5)
	require.Equal(t, "zk5:2181", c.Endpoints(lab.FromSite)[4])
	require.NoError(t, c.Limit(ctx))
	name := func(m lab.Target) string { return env.RunID + "-" + m.Name() }
	for _, m := range c.Members() {
		require.Equal(t, "500000000", inspect(t, "{{.HostConfig.NanoCpus}}", name(m)), m.Name())
	}
	seed(t, c.Endpoints(lab.FromHost), 2000)

	replace := func(target lab.Target, gate string) time.Duration {
		f := faults.MustNew("replace").(*faults.Replace)
		f.Gate, f.GateTimeout, f.OnTimeout = gate, lab.Duration(45*time.Second), faults.OnTimeoutStop
		require.NoError(t, f.Available(target))
		began := time.Now()
		require.NoError(t, f.Inject(ctx, target, 0), evs.text())
		return time.Since(began)
	}
	old := inspect(t, "{{.Id}}", name(obs[0]))
	took := replace(obs[0], faults.GateDeep)
	t.Logf("TIMING replace %s (observer, 2000 znodes) until the deep gate passed: %s", obs[0].Name(), took.Round(time.Millisecond))
	require.NotEqual(t, old, inspect(t, "{{.Id}}", name(obs[0])), "a fresh container")
	require.Equal(t, "500000000", inspect(t, "{{.HostConfig.NanoCpus}}", name(obs[0])), "under the CPU share from its start")
	require.Contains(t, inspect(t, "{{json .Config.Env}}", name(obs[0])), "ZOO_MY_ID=4")
	require.Contains(t, inspect(t, "{{json .NetworkSettings.Networks}}", name(obs[0])), `"zk4"`)
	require.Contains(t, evs.text(), "deep gate passed by zk4")
	require.Equal(t, lab.RoleObserver, roles(t, ctx, c)["zk4"])
	requireNodes(t, ctx, obs[0], 2000)
	out, err := os.ReadFile(filepath.Join(env.LogDir, "zk4.log"))
	require.NoError(t, err)
	require.Contains(t, string(out), "Getting a snapshot from leader", "an empty member syncs a whole snapshot")

	voter := resolve(t, ctx, c, env, "follower")[0]
	took = replace(voter, faults.GateShallow)
	t.Logf("TIMING replace %s (voter) until the shallow gate passed: %s", voter.Name(), took.Round(time.Millisecond))
	require.Contains(t, evs.text(), "shallow gate passed by "+voter.Name())
	require.NoError(t, c.WaitHealthy(ctx))
	require.Zero(t, logCounts(t, ctx, c)[zookeeper.SeriesNotSynced], "replacing one member at a time keeps a quorum")

	followers := resolve(t, ctx, c, env, "followers")
	require.Len(t, followers, 2)
	for _, f := range followers {
		require.NoError(t, f.Kill())
	}
	require.Eventually(t, func() bool { return logCounts(t, ctx, c)[zookeeper.SeriesNotSynced] >= 1 },
		30*time.Second, 500*time.Millisecond, "the leader logs Not sufficient followers synced")
	for _, f := range followers {
		require.NoError(t, f.Restart(ctx))
	}
	require.NoError(t, c.WaitHealthy(ctx))
	require.Eventually(t, func() bool { return logCounts(t, ctx, c)[zookeeper.SeriesElections] >= 1 },
		10*time.Second, 500*time.Millisecond, "a leader elected again")
	t.Logf("log counts after the followers' loss: %v", logCounts(t, ctx, c))
}
