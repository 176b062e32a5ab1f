package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/infra/owner"
	"github.com/chaoslab/chaoslab/harness/infra/syncw"
	"github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper/zkcheck"
	"github.com/chaoslab/chaoslab/record"
)

// TestIntegration_KubernetesZooKeeper starts a 3-server ensemble on the
// test cluster (./scripts/kube-up.sh) through the ZooKeeper system and
// this placement, checks its health and leader through the system,
// reaches every server through its port forward, and checks that the
// site's Close leaves no namespace. Skipped when no cluster answers.
func TestIntegration_KubernetesZooKeeper(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plc, sys, topo, log := zooKeeperOnCluster(t, ctx)
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

	// pause: the leader's pod frozen for 3 s, proven from the kernel's
	// freezer (its state read back: paused), then thawed; the ensemble
	// is whole again.
	pctx, proofs := faults.WithProofs(ctx, nil)
	ls := leader.(lab.Server)
	paused := make(chan string, 1)
	go func() {
		time.Sleep(time.Second)
		st, _ := ls.State(ctx)
		paused <- st
	}()
	require.NoError(t, faults.MustNew("pause").Inject(pctx, leader, 3*time.Second))
	require.Equal(t, lab.StatePaused, <-paused, "paused while the fault lasts")
	pr := proofs.List()
	require.Len(t, pr, 1)
	require.Equal(t, record.Landed, pr[0].Landed, "%+v", pr[0])
	t.Logf("pause proven: %s", pr[0].Observed)
	require.False(t, ls.Paused())
	st, err := ls.State(ctx)
	require.NoError(t, err)
	require.Equal(t, lab.StateRunning, st, "thawed")
	hctx, hcancel = context.WithTimeout(ctx, time.Minute)
	require.NoError(t, c.WaitHealthy(hctx))
	hcancel()
	// disconnect: a follower cut off in its node's network for 3 s: the
	// cut read back from the node's rules, its client port unanswered
	// through its forward, then answered again.
	var follower lab.Member
	for _, m := range c.Members() {
		if m.Name() != leader.Name() {
			follower = m
		}
	}
	fs := follower.(lab.Server)
	pctx, proofs = faults.WithProofs(ctx, nil)
	cutAnswer := make(chan string, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cut := fs.Disconnected()
		asked := time.Now()
		out, err := zkcheck.FourLetter(ctx, fs.Addr("client", lab.FromHost), "ruok")
		t.Logf("ruok while cut off: %q, %v, after %s", out, err, time.Since(asked).Round(time.Millisecond))
		cutAnswer <- fmt.Sprintf("%v %q", cut, out)
	}()
	require.NoError(t, faults.MustNew("disconnect").Inject(pctx, follower, 3*time.Second))
	require.Equal(t, `true ""`, <-cutAnswer, "cut off: read back, and ruok unanswered")
	pr = proofs.List()
	require.Len(t, pr, 1)
	require.Equal(t, record.Landed, pr[0].Landed, "%+v", pr[0])
	require.False(t, fs.Disconnected())
	out, err := zkcheck.FourLetter(ctx, fs.Addr("client", lab.FromHost), "ruok")
	require.NoError(t, err)
	require.Equal(t, "imok", out, "answers again")
	hctx, hcancel = context.WithTimeout(ctx, time.Minute)
	require.NoError(t, c.WaitHealthy(hctx))
	hcancel()
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

// zooKeeperOnCluster skips the test without root or a cluster that can
// run ZooKeeper; else it returns the placement prepared for it.
func zooKeeperOnCluster(t *testing.T, ctx context.Context) (lab.Placement, lab.System, *zookeeper.Topology, *slog.Logger) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts pods on a Kubernetes cluster (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: the test cluster (./scripts/kube-up.sh) runs as root")
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, nil))
	plc, err := New(lab.PlacementOptions{Log: log})
	require.NoError(t, err)
	if err := plc.Available(ctx); err != nil {
		t.Skipf("no Kubernetes cluster answers (./scripts/kube-up.sh starts the test cluster): %v", err)
	}
	sys, err := lab.GetSystem(zookeeper.Name)
	require.NoError(t, err)
	topo := sys.NewTopology().(*zookeeper.Topology)
	topo.HeapMB = 128
	needs := append(topo.Images(), lab.ImageNeed{Name: lab.AgentImage, Defaults: []string{images.ChaoslabRef("")}})
	if err := plc.Prepare(ctx, needs); err != nil {
		t.Skipf("the cluster cannot run ZooKeeper and chaoslab's agents (./scripts/kube-up.sh moves the images `chaoslab images build` made into it): %v", err)
	}
	require.NoError(t, sys.Prepare(ctx, plc, log))
	return plc, sys, topo, log
}

// Clients as pods (issue 27): two tree mirrors of chaoslab's own agent
// against a ZooKeeper ensemble on the cluster, one with room for the
// 20 MB tree (it reports its samples on its standard output, its log on
// its standard error, each where it belongs) and one whose 12 MiB limit
// cannot hold it: the kubelet OOM-kills it, and the exit says so, read
// from the pod's status (OOMKilled).
func TestIntegration_KubernetesClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	plc, sys, topo, log := zooKeeperOnCluster(t, ctx)
	dir := t.TempDir()
	runID := fmt.Sprintf("t-kube-clients-%d", time.Now().UnixNano()%1e9)
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = site.Close() })
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })

	conn, _, err := zk.Connect(c.Endpoints(lab.FromHost), 10*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	tree := zkmirror.Tree{Root: "/mirror", Fanout: []int{200}, DataBytes: 100_000}
	require.NoError(t, zkmirror.Seed(ctx, conn, tree, nil, log))

	type client struct {
		mu     sync.Mutex
		out    []string
		stderr strings.Builder
		proc   lab.Proc
	}
	start := func(id string, mb int) *client {
		cl := &client{}
		cfg := zkmirror.Config{Client: zkmirror.NewSettings().Client, ID: id, Servers: c.Endpoints(lab.FromSite), Root: tree.Root, Seed: 1}
		p, err := site.Start(ctx, lab.Program{Name: id + "-0", Alias: id, Role: "client", Agent: zkmirror.KindName, Config: cfg,
			Limits: lab.Limits{MemoryMB: mb},
			Stdout: func(line []byte) { cl.mu.Lock(); cl.out = append(cl.out, string(line)); cl.mu.Unlock() },
			Stderr: &syncw.Writer{Mu: &cl.mu, W: &cl.stderr}})
		require.NoError(t, err, id)
		cl.proc = p
		return cl
	}
	roomy, tight := start("client-01", 256), start("client-02", 12)

	select {
	case <-tight.proc.Done():
	case <-time.After(90 * time.Second):
		t.Fatalf("client-02 (12 MiB) still runs after 90 s")
	}
	e := tight.proc.Exit()
	require.True(t, e.OOM, "client-02 OOM-killed by the kubelet, its pod's status says OOMKilled: %+v", e)
	t.Logf("client-02 ended: %s", e.How)

	require.Eventually(t, func() bool {
		roomy.mu.Lock()
		defer roomy.mu.Unlock()
		for _, l := range roomy.out {
			var smp zkmirror.Sample
			if json.Unmarshal([]byte(l), &smp) == nil && smp.ID == "client-01" && smp.Nodes >= tree.Nodes() {
				return true
			}
		}
		return false
	}, time.Minute, time.Second, "client-01 reports its whole mirror on its standard output")
	roomy.mu.Lock()
	for _, l := range roomy.out {
		require.True(t, json.Valid([]byte(l)), "only samples on its standard output: %q", l)
	}
	require.Contains(t, roomy.stderr.String(), "level=", "its log (standard error) is its own")
	require.NotContains(t, roomy.stderr.String(), `{"t":`, "no sample in its log")
	roomy.mu.Unlock()
	select {
	case <-roomy.proc.Done():
		t.Fatalf("client-01 ended: %+v", roomy.proc.Exit())
	default:
	}
	ex := roomy.proc.Stop(2 * time.Second)
	require.True(t, ex.Stopped, "stopped by the lab: %+v", ex)
	require.NoError(t, roomy.proc.Release())
	require.NoError(t, tight.proc.Release())

	require.NoError(t, c.Close())
	require.NoError(t, site.Close())
	k := plc.(*Placement).k
	_, err = k.run(ctx, nil, "get", "namespace", site.(*Site).Namespace())
	require.True(t, isNotFound(err), "the namespace is gone: %v", err)
}

// testLog is the test's log, a line per write (labtest links every
// plug-in, this placement among them).
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
