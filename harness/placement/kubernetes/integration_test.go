package kubernetes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/owner"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)

// TestIntegration_KubernetesZooKeeper starts a 3-server ensemble on the
// test cluster (./scripts/kube-up.sh) through the ZooKeeper system and
// this placement, checks its health and leader through the system,
// reaches every server through its port forward, and checks that the
// site's Close leaves no namespace. Skipped when no cluster answers.
func TestIntegration_KubernetesZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts ZooKeeper pods on a Kubernetes cluster (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: the test cluster (./scripts/kube-up.sh) runs as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := labtest.Logger(t)
	plc, err := New(lab.PlacementOptions{Log: log})
	require.NoError(t, err)
	if err := plc.Available(ctx); err != nil {
		t.Skipf("no Kubernetes cluster answers (./scripts/kube-up.sh starts the test cluster): %v", err)
	}
	sys, err := lab.GetSystem(zookeeper.Name)
	require.NoError(t, err)
	topo := sys.NewTopology().(*zookeeper.Topology)
	topo.HeapMB = 128
	if err := plc.Prepare(ctx, topo.Images()); err != nil {
		t.Skipf("the cluster cannot run ZooKeeper (./scripts/kube-up.sh moves the images `chaoslab images build` made into it): %v", err)
	}
	require.NoError(t, sys.Prepare(ctx, plc, log))
	k := plc.(*Placement).k

	dir := t.TempDir()
	runID := fmt.Sprintf("t-kube-zk-%d", time.Now().UnixNano()%1e9)
	began := time.Now()
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	tookNS := time.Since(began)
	closed := false
	ns := site.(*Site).Namespace()
	t.Cleanup(func() {
		if t.Failed() {
			for _, sv := range site.(*Site).servers {
				n, why := sv.relay.ended()
				t.Logf("%s: %d port forwards ended while its pod ran; the last said: %s", sv.Name(), n, why)
			}
			for _, what := range [][]string{{"get", "pods", "-o", "wide", "-n", ns}, {"get", "events", "-n", ns}} {
				out, err := k.run(context.Background(), nil, what...)
				t.Logf("kubectl %s: %v\n%s", strings.Join(what, " "), err, out)
			}
			logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				lines := strings.Split(string(b), "\n")
				t.Logf("%s (last lines):\n%s", l, strings.Join(lines[max(0, len(lines)-20):], "\n"))
			}
		}
		if !closed {
			_ = site.Close()
		}
	})
	var nsObj struct {
		Metadata objectMeta `json:"metadata"`
	}
	require.NoError(t, k.getJSON(ctx, &nsObj, "namespace", ns))
	require.Equal(t, runID, nsObj.Metadata.Labels[LabelRun])
	require.Equal(t, owner.Label(), nsObj.Metadata.Labels[LabelOwner])

	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	began = time.Now()
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	tookHealthy := time.Since(began)

	var running, serving time.Duration
	for _, sv := range site.(*Site).servers {
		running, serving = max(running, sv.Timings.Running), max(serving, sv.Timings.Serving)
	}
	t.Logf("TIMING namespace created in %s; 3 pods running %s after the start, serving (mntr through the port forward) %s; ensemble healthy (one leader, two synced followers) %s",
		tookNS.Round(time.Millisecond), running.Round(time.Millisecond), serving.Round(time.Millisecond), tookHealthy.Round(time.Millisecond))

	// Health and leader as the system sees them.
	hctx, hcancel := context.WithTimeout(ctx, time.Minute)
	require.NoError(t, c.WaitHealthy(hctx))
	hcancel()
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	roles := map[string]int{}
	for _, m := range c.Members() {
		r, err := m.Role(ctx)
		require.NoError(t, err, m.Name())
		roles[r]++
	}
	require.Equal(t, map[string]int{lab.RoleLeader: 1, lab.RoleFollower: 2}, roles)
	t.Logf("leader %s", leader.Name())
	for _, sv := range site.(*Site).servers {
		n, why := sv.relay.ended()
		t.Logf("%s: %d port forwards ended while its pod ran (the last said: %s)", sv.Name(), n, why)
	}
	for i, a := range c.Endpoints(lab.FromHost) {
		require.True(t, strings.HasPrefix(a, "127.0.0.1:"), "the harness reaches %s through its forward, not %s", c.Members()[i].Name(), a)
	}
	node := site.(*Site).nodes[0].ip
	for _, a := range c.Endpoints(lab.FromSite) {
		require.True(t, strings.HasPrefix(a, node+":"), "peers reach %s on the node's network", a)
	}
	var pods struct {
		Items []pod `json:"items"`
	}
	require.NoError(t, k.getJSON(ctx, &pods, "pods", "-n", ns, "-l", LabelRun+"="+runID))
	require.Len(t, pods.Items, 3, "one pod per member")
	for _, m := range c.Members() {
		st, err := m.(lab.Server).State(ctx)
		require.NoError(t, err)
		require.Equal(t, lab.StateRunning, st, m.Name())
		out, err := os.ReadFile(filepath.Join(env.LogDir, m.Name()+".log"))
		require.NoError(t, err)
		require.Regexp(t, `LEADING|FOLLOWING`, string(out), "%s's output copied to its log", m.Name())
	}
	// The sampler's reading of every member, through the forwards.
	for _, s := range c.Sample(ctx) {
		if s.Member != "" && strings.HasPrefix(s.Member, "zk") {
			require.True(t, s.OK, "%s sampled", s.Member)
		}
	}

	began = time.Now()
	require.NoError(t, c.Close())
	tookStop := time.Since(began)
	closed = true
	require.NoError(t, site.Close())
	tookClose := time.Since(began)
	t.Logf("TIMING teardown: servers stopped (pods deleted) in %s, namespace gone %s after", tookStop.Round(time.Millisecond), tookClose.Round(time.Millisecond))
	_, err = k.run(ctx, nil, "get", "namespace", ns)
	require.True(t, isNotFound(err), "namespace %s is gone: %v", ns, err)
	var left struct {
		Items []any `json:"items"`
	}
	require.NoError(t, k.getJSON(ctx, &left, "namespaces", "-l", LabelRun+"="+runID))
	require.Empty(t, left.Items, "no namespace of the run is left")
}
