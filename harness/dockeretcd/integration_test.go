package dockeretcd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
)

// tWriter sends log output to t.Log until the test's cleanup has run.
type tWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, nil))
}

// requireIntegration skips unless Docker answers and an etcd image is
// present; it returns the image: $CHAOSLAB_ETCD_IMAGE, chaoslab/etcd or
// the official one.
func requireIntegration(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if err := docker.Available(context.Background()); err != nil {
		t.Skipf("integration test: no Docker engine: %v", err)
	}
	img, err := FindImage(context.Background())
	if err != nil {
		t.Skipf("integration test: no etcd image on this engine (%v): run `chaoslab images build --only etcd`", err)
	}
	return img
}

func testRunID(t *testing.T) string {
	return fmt.Sprintf("t-etcd-%s-%d", strings.ToLower(t.Name()[len("TestIntegration_"):]), time.Now().UnixNano()%1e6)
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	require.NoError(t, err, "docker %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func inspect(t *testing.T, format, container string) string {
	t.Helper()
	return dockerCLI(t, "inspect", "-f", format, container)
}

// requireNothingLeft checks that no container, network or volume of the
// run exists.
func requireNothingLeft(t *testing.T, runID string) {
	t.Helper()
	left, err := docker.Leftovers(context.Background(), runID)
	require.NoError(t, err)
	require.Empty(t, left, "run %s", runID)
	require.Empty(t, dockerCLI(t, "volume", "ls", "-q", "--filter", "label="+docker.LabelRun+"="+runID))
}

// getVia reads key through one endpoint only (a linearizable read: it
// goes through the leader).
func getVia(t *testing.T, ctx context.Context, endpoint, key string) string {
	t.Helper()
	cli, err := NewClient(endpoint)
	require.NoError(t, err)
	defer cli.Close()
	var val string
	require.Eventually(t, func() bool {
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		r, err := cli.Get(gctx, key)
		if err != nil || len(r.Kvs) != 1 {
			return false
		}
		val = string(r.Kvs[0].Value)
		return true
	}, 20*time.Second, 100*time.Millisecond, "get %s via %s", key, endpoint)
	return val
}

func put(t *testing.T, ctx context.Context, cli *clientv3.Client, key, val string) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := cli.Put(pctx, key, val)
	require.NoError(t, err)
}

// TestIntegration_Cluster runs one 3-member cluster through the faults in
// turn; each step ends with the cluster healthy again.
func TestIntegration_Cluster(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	begin := time.Now()
	cl, err := StartCluster(ctx, Options{Members: 3, Image: img, RunID: runID, LogDir: t.TempDir(), Logger: testLogger(t)})
	require.NoError(t, err)
	t.Logf("TIMING start 3 members to healthy: %v (image %s)", time.Since(begin).Round(time.Millisecond), img)
	closed := false
	t.Cleanup(func() {
		if !closed {
			if t.Failed() {
				for _, m := range cl.Members() {
					t.Log(m.logTail(30))
				}
			}
			_ = cl.Close()
		}
		_, _ = docker.Sweep(context.Background(), runID)
	})
	healthy := func(t *testing.T, what string) time.Duration {
		t.Helper()
		began := time.Now()
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, cl.WaitHealthy(hctx), what)
		return time.Since(began)
	}

	t.Run("HealthyAndServesClients", func(t *testing.T) {
		require.Len(t, cl.Members(), 3)
		require.Len(t, cl.Endpoints(), 3)
		for i, m := range cl.Members() {
			require.Equal(t, i+1, m.ID())
			require.Equal(t, MemberName(i+1), m.Name())
			name := runID + "-" + m.Name()
			require.Equal(t, name, m.ContainerName())
			require.True(t, strings.HasPrefix(m.Endpoint(), "127.0.0.1:"), m.Endpoint())
			require.Equal(t, m.Endpoint(), cl.Endpoints()[i])
			require.NotZero(t, m.MemberID())
			require.True(t, m.Running())
			require.False(t, m.Paused())
			require.NoError(t, m.Health(ctx))
			// Labels, alias, entrypoint, flags and port bindings as the engine has them.
			require.Equal(t, runID+" true etcd "+m.Name(), inspect(t, `{{index .Config.Labels "org.chaoslab.run"}} {{index .Config.Labels "org.chaoslab.managed"}} {{index .Config.Labels "org.chaoslab.component"}} {{index .Config.Labels "org.chaoslab.member"}}`, name))
			require.Contains(t, inspect(t, `{{json .NetworkSettings.Networks}}`, name), `"`+m.Name()+`"`)
			require.Equal(t, `["/usr/local/bin/etcd"]`, inspect(t, `{{json .Config.Entrypoint}}`, name))
			cmd := inspect(t, `{{json .Config.Cmd}}`, name)
			for _, f := range []string{"--name=" + m.Name(), "--initial-cluster=" + InitialCluster(3), "--initial-cluster-token=" + runID, "--initial-cluster-state=new", "--advertise-client-urls=http://" + m.Name() + ":2379", "--data-dir=/tmp/etcd"} {
				require.Contains(t, cmd, `"`+f+`"`)
			}
			require.Equal(t, `[{"HostIp":"127.0.0.1","HostPort":"`+strings.TrimPrefix(m.Endpoint(), "127.0.0.1:")+`"}]`, inspect(t, `{{json (index .NetworkSettings.Ports "2379/tcp")}}`, name))
			require.Equal(t, `[{"HostIp":"127.0.0.1","HostPort":"`+strings.TrimPrefix(m.MetricsAddr(), "127.0.0.1:")+`"}]`, inspect(t, `{{json (index .NetworkSettings.Ports "2381/tcp")}}`, name))
			st, err := m.State(ctx)
			require.NoError(t, err)
			require.Equal(t, "running", st.Status)
		}
		require.Equal(t, runID, dockerCLI(t, "network", "inspect", "-f", `{{index .Labels "org.chaoslab.run"}}`, cl.Network()))

		cli, err := cl.NewClient()
		require.NoError(t, err)
		defer cli.Close()
		put(t, ctx, cli, "/chaoslab/hello", "world")
		for _, ep := range cl.Endpoints() {
			require.Equal(t, "world", getVia(t, ctx, ep, "/chaoslab/hello"))
		}
		list, err := cli.MemberList(ctx)
		require.NoError(t, err)
		require.Len(t, list.Members, 3)
		for _, m := range cl.Members() {
			b, err := os.ReadFile(m.LogPath())
			require.NoError(t, err)
			require.Contains(t, string(b), "ready to serve client requests")
		}
	})

	t.Run("PauseTheLeader", func(t *testing.T) {
		l, err := cl.Leader(ctx)
		require.NoError(t, err)
		began := time.Now()
		require.NoError(t, l.Pause())
		require.True(t, l.Paused())
		require.Equal(t, "paused", inspect(t, "{{.State.Status}}", l.ContainerName()))
		_, err = l.Status(ctx)
		require.Error(t, err, "a paused member does not answer")
		lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		nl, err := cl.Leader(lctx)
		cancel()
		require.NoError(t, err, "a new leader while the old one is paused")
		require.NotEqual(t, l, nl)
		t.Logf("TIMING new leader %s (stable over %d polls %v apart) %v after pausing %s", nl.Name(), stablePolls, pollInterval, time.Since(began).Round(time.Millisecond), l.Name())
		// The two others serve writes meanwhile.
		cli, err := NewClient(nl.Endpoint())
		require.NoError(t, err)
		put(t, ctx, cli, "/chaoslab/during-pause", "yes")
		cli.Close()
		require.NoError(t, l.Resume())
		resumed := time.Now()
		require.False(t, l.Paused())
		healthy(t, "after resume")
		t.Logf("TIMING healthy %v after resuming %s", time.Since(resumed).Round(time.Millisecond), l.Name())
		require.Equal(t, "yes", getVia(t, ctx, l.Endpoint(), "/chaoslab/during-pause"))
	})

	t.Run("KillAndRestartAFollower", func(t *testing.T) {
		fs, err := cl.Followers(ctx)
		require.NoError(t, err)
		require.Len(t, fs, 2)
		f := fs[len(fs)-1]
		require.NoError(t, f.Kill())
		st, err := f.State(ctx)
		require.NoError(t, err)
		require.False(t, st.Running)
		require.Equal(t, 137, st.ExitCode)
		require.False(t, st.OOMKilled)
		healthy(t, "two members left") // a stopped member does not count
		began := time.Now()
		require.NoError(t, f.Restart(ctx))
		t.Logf("TIMING restart %s until it has a leader: %v", f.Name(), time.Since(began).Round(time.Millisecond))
		require.Equal(t, cl.Endpoints()[f.ID()-1], f.Endpoint())
		healthy(t, "after restart")
		require.Equal(t, "world", getVia(t, ctx, f.Endpoint(), "/chaoslab/hello"), "the data survived")
	})

	t.Run("ReplaceAFollower", func(t *testing.T) {
		fs, err := cl.Followers(ctx)
		require.NoError(t, err)
		f := fs[0]
		oldCtr, oldID := f.ContainerID(), f.MemberID()
		began := time.Now()
		require.NoError(t, faults.MustNew("replace").Inject(ctx, f, 0))
		t.Logf("TIMING replace %s (member remove, add, fresh container) until it has a leader: %v", f.Name(), time.Since(began).Round(time.Millisecond))
		require.NotEqual(t, oldCtr, f.ContainerID())
		require.NotEqual(t, oldID, f.MemberID())
		require.Equal(t, StateExisting, f.Config().ClusterState)
		require.Contains(t, inspect(t, `{{json .Config.Cmd}}`, f.ContainerName()), `"--initial-cluster-state=existing"`)
		healthy(t, "after replace")
		require.Equal(t, "world", getVia(t, ctx, f.Endpoint(), "/chaoslab/hello"), "the fresh member got the data from the leader")
		cli, err := cl.NewClient()
		require.NoError(t, err)
		defer cli.Close()
		list, err := cli.MemberList(ctx)
		require.NoError(t, err)
		require.Len(t, list.Members, 3)
	})

	t.Run("DisconnectAFollower", func(t *testing.T) {
		fs, err := cl.Followers(ctx)
		require.NoError(t, err)
		f := fs[0]
		done := make(chan error, 1)
		go func() { done <- faults.MustNew("disconnect").Inject(ctx, f, 4*time.Second) }()
		require.Eventually(t, func() bool {
			return inspect(t, `{{len .NetworkSettings.Networks}}`, f.ContainerName()) == "0"
		}, 3*time.Second, 50*time.Millisecond)
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := cl.Leader(lctx)
		cancel()
		require.NoError(t, err, "the other two keep a leader")
		require.NotEqual(t, f, l)
		require.NoError(t, <-done)
		healthy(t, "after reconnect")
		require.Contains(t, cl.Endpoints(), f.Endpoint())
	})

	t.Run("CPUThrottleAndLimits", func(t *testing.T) {
		l, err := cl.Leader(ctx)
		require.NoError(t, err)
		require.NoError(t, (&faults.CPUThrottle{Cores: 0.2}).Inject(ctx, l, time.Second))
		n, err := docker.HostCPUs(ctx)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(n*1e9), inspect(t, "{{.HostConfig.NanoCpus}}", l.ContainerName()))
		require.NoError(t, l.SetMemoryLimit(512<<20))
		require.NoError(t, l.SetPidsLimit(500))
		require.Equal(t, "536870912 536870912 500", inspect(t, "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}}", l.ContainerName()))
		healthy(t, "after limits")
	})

	require.NoError(t, cl.Close())
	closed = true
	require.NoError(t, cl.Close(), "idempotent")
	requireNothingLeft(t, runID)
	require.Error(t, cl.Member(1).Restart(ctx), "nothing starts after Close")
	requireNothingLeft(t, runID)
}

// TestIntegration_SingleMember runs a 1-member cluster: healthy at once,
// serves reads and writes, Close leaves nothing.
func TestIntegration_SingleMember(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	begin := time.Now()
	cl, err := StartCluster(ctx, Options{Members: 1, Image: img, RunID: runID, LogDir: t.TempDir(), Logger: testLogger(t)})
	require.NoError(t, err)
	t.Logf("TIMING start 1 member to healthy: %v", time.Since(begin).Round(time.Millisecond))
	l, err := cl.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, cl.Member(1), l)
	require.Contains(t, inspect(t, `{{json .Config.Cmd}}`, runID+"-etcd1"), `"--initial-cluster=etcd1=http://etcd1:2380"`)
	cli, err := cl.NewClient()
	require.NoError(t, err)
	put(t, ctx, cli, "k", "v")
	cli.Close()
	require.Equal(t, "v", getVia(t, ctx, cl.Endpoints()[0], "k"))
	require.Error(t, l.Replace(ctx), "a single member cannot be replaced")
	require.NoError(t, cl.Close())
	requireNothingLeft(t, runID)
}

// TestIntegration_Run starts one member with Run alone and leaves it
// behind as a crashed run would: Sweep removes it.
func TestIntegration_Run(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	c, err := Run(ctx, img, WithRunID(runID), WithTimings(50, 500))
	require.NoError(t, err, "a single-member cluster is healthy when Run returns")
	require.NoError(t, c.Health(ctx))
	st, err := c.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, st.Header.MemberId, st.Leader)
	require.Equal(t, "3.6.16", st.Version)
	addr, err := c.ClientAddress(ctx)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
	require.Contains(t, c.Config().Args(), "--election-timeout=500")
	swept, err := docker.Sweep(ctx, runID)
	require.NoError(t, err)
	require.Len(t, swept.Containers, 1)
	requireNothingLeft(t, runID)
}
