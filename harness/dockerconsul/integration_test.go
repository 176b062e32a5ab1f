package dockerconsul

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"

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

// requireIntegration skips unless Docker answers and a Consul image is
// present; it returns the image: $CHAOSLAB_CONSUL_IMAGE, chaoslab/consul
// or the official one.
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
		t.Skipf("integration test: no Consul image on this engine (%v): run `chaoslab images build --only consul`", err)
	}
	return img
}

func testRunID(t *testing.T) string {
	return fmt.Sprintf("t-consul-%s-%d", strings.ToLower(t.Name()[len("TestIntegration_"):]), time.Now().UnixNano()%1e6)
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

func kvPut(t *testing.T, ctx context.Context, cli *api.Client, key, val string) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := cli.KV().Put(&api.KVPair{Key: key, Value: []byte(val)}, (&api.WriteOptions{}).WithContext(pctx))
	require.NoError(t, err)
}

func kvGet(t *testing.T, ctx context.Context, n *Node, key string) string {
	t.Helper()
	cli, err := n.NewClient()
	require.NoError(t, err)
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, _, err := cli.KV().Get(key, (&api.QueryOptions{RequireConsistent: true}).WithContext(gctx))
	require.NoError(t, err)
	require.NotNil(t, p, "key %s via %s", key, n.Name())
	return string(p.Value)
}

// TestIntegration_Cluster runs 1 server and 2 client agents: healthy, a
// KV write through an agent, then IL-0206 in small: an agent under a small
// memory limit is OOM-killed by a burst of KV writes through it, and
// comes back with a restart.
func TestIntegration_Cluster(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	begin := time.Now()
	cl, err := StartCluster(ctx, Options{
		Servers: 1, Agents: 2, Image: img, RunID: runID, LogDir: t.TempDir(), Logger: testLogger(t),
		RaftMultiplier: 1,
	})
	require.NoError(t, err)
	t.Logf("TIMING start 1 server + 2 agents to healthy: %v (image %s)", time.Since(begin).Round(time.Millisecond), img)
	closed := false
	t.Cleanup(func() {
		if !closed {
			if t.Failed() {
				for _, n := range cl.Nodes() {
					t.Log(n.logTail(30))
				}
			}
			_ = cl.Close()
		}
		_, _ = docker.Sweep(context.Background(), runID)
	})
	healthy := func(t *testing.T, what string) time.Duration {
		t.Helper()
		began := time.Now()
		hctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		require.NoError(t, cl.WaitHealthy(hctx), what)
		return time.Since(began)
	}

	t.Run("HealthyAndServesClients", func(t *testing.T) {
		require.Len(t, cl.Servers(), 1)
		require.Len(t, cl.Agents(), 2)
		require.Len(t, cl.HTTPAddrs(), 3)
		for i, n := range cl.Nodes() {
			name := runID + "-consul-" + n.Name()
			require.Equal(t, name, n.ContainerName())
			require.True(t, strings.HasPrefix(n.HTTPAddr(), "127.0.0.1:"), n.HTTPAddr())
			require.Equal(t, n.HTTPAddr(), cl.HTTPAddrs()[i])
			require.True(t, n.IP().IsValid())
			require.Equal(t, runID+" true consul "+n.Name(), inspect(t, `{{index .Config.Labels "org.chaoslab.run"}} {{index .Config.Labels "org.chaoslab.managed"}} {{index .Config.Labels "org.chaoslab.component"}} {{index .Config.Labels "org.chaoslab.member"}}`, name))
			require.Contains(t, inspect(t, `{{json .NetworkSettings.Networks}}`, name), `"`+n.Name()+`"`)
			require.Equal(t, `["/bin/consul"]`, inspect(t, `{{json .Config.Entrypoint}}`, name))
			cmd := inspect(t, `{{json .Config.Cmd}}`, name)
			for _, f := range []string{"agent", "-node=" + n.Name(), "-retry-join=server1", "-client=0.0.0.0", "-bind=0.0.0.0", "-data-dir=/consul/data"} {
				require.Contains(t, cmd, `"`+f+`"`)
			}
			require.Equal(t, n.IsServer(), strings.Contains(cmd, `"-server"`))
			require.Equal(t, `[{"HostIp":"127.0.0.1","HostPort":"`+strings.TrimPrefix(n.HTTPAddr(), "127.0.0.1:")+`"}]`, inspect(t, `{{json (index .NetworkSettings.Ports "8500/tcp")}}`, name))
			ms, err := n.Members(ctx)
			require.NoError(t, err)
			require.Len(t, ms, 3)
		}
		require.Contains(t, inspect(t, `{{json .Config.Cmd}}`, cl.Servers()[0].ContainerName()), `"-bootstrap-expect=1"`)
		l, err := cl.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, cl.Servers()[0], l)
		require.Equal(t, runID, dockerCLI(t, "network", "inspect", "-f", `{{index .Labels "org.chaoslab.run"}}`, cl.Network()))

		// A KV write through an agent, read back through the other agent.
		cli, err := cl.Agents()[0].NewClient()
		require.NoError(t, err)
		kvPut(t, ctx, cli, "chaoslab/hello", "world")
		require.Equal(t, "world", kvGet(t, ctx, cl.Agents()[1], "chaoslab/hello"))
		for _, n := range cl.Nodes() {
			b, err := os.ReadFile(n.LogPath())
			require.NoError(t, err)
			require.Contains(t, string(b), "Consul agent running!")
		}
	})

	t.Run("AgentUnderAMemoryLimitIsOOMKilledByAWriteBurst", func(t *testing.T) {
		a := cl.Agents()[1]
		usage, err := a.MemoryUsage(ctx)
		require.NoError(t, err)
		// 24 MB is below the agent's usage (~90 MB, mostly the page cache
		// of its 113 MB binary) but above its anonymous memory (~20 MB):
		// the kernel reclaims the cache and takes the limit. Should it
		// refuse (cgroup v1: EBUSY), try larger ones.
		var limit int64
		for _, mb := range []int64{24, 32, 48, 64} {
			if err = a.SetMemoryLimit(mb << 20); err == nil {
				limit = mb << 20
				break
			}
			t.Logf("a %d MB limit refused at %d MB used: %v", mb, usage>>20, err)
		}
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%d %d", limit, limit), inspect(t, "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}", a.ContainerName()))
		t.Logf("agent %s: %d MB used, limit %d MB", a.Name(), usage>>20, limit>>20)

		// The burst: 64 writers, values of 256 KB. (20,000 keys of 1 KB
		// do not do it: a client agent stores nothing, so its memory
		// hardly grows; under 24 MB it thrashes on its own binary's pages
		// at ~12 writes/s instead. A dev-mode server, which stores the
		// keys, is OOM-killed by them within seconds.)
		cli, err := a.NewClient()
		require.NoError(t, err)
		val := []byte(strings.Repeat("x", 256<<10))
		const keys, workers = 1000, 64
		var next, done, failed atomic.Int64
		began := time.Now()
		bctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > keys || bctx.Err() != nil {
						return
					}
					pctx, cancel := context.WithTimeout(bctx, 10*time.Second)
					_, err := cli.KV().Put(&api.KVPair{Key: fmt.Sprintf("burst/%06d", i), Value: val}, (&api.WriteOptions{}).WithContext(pctx))
					cancel()
					if err != nil {
						failed.Add(1)
					} else {
						done.Add(1)
					}
				}
			})
		}
		var killedAfter time.Duration
		for killedAfter == 0 && time.Since(began) < 30*time.Second {
			st, err := a.State(ctx)
			require.NoError(t, err)
			if st.OOMKilled {
				killedAfter = time.Since(began)
				break
			}
			if !st.Running {
				t.Fatalf("agent stopped without an OOM kill: %+v", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
		stop()
		wg.Wait()
		st, err := a.State(ctx)
		require.NoError(t, err)
		require.True(t, st.OOMKilled, "the agent was OOM-killed (%d writes done, %d failed in %v): %+v", done.Load(), failed.Load(), time.Since(began), st)
		require.False(t, st.Running)
		require.Equal(t, 137, st.ExitCode)
		require.True(t, a.OOMKilled())
		require.Equal(t, "true 137", inspect(t, "{{.State.OOMKilled}} {{.State.ExitCode}}", a.ContainerName()))
		t.Logf("TIMING agent %s OOM-killed %v into the burst (%d writes done, %d failed)", a.Name(), killedAfter.Round(time.Millisecond), done.Load(), failed.Load())
		b, err := os.ReadFile(a.LogPath())
		require.NoError(t, err)
		require.Contains(t, string(b), "OOM killed true", "the log marks the kill")

		// The others carry on without it (a stopped node does not count).
		healthy(t, "without the killed agent")
		// With its limit lifted it comes back with its data and rejoins.
		require.NoError(t, a.SetMemoryLimit(1<<30))
		began = time.Now()
		require.NoError(t, a.Restart(ctx))
		hl := healthy(t, "after restarting the agent")
		t.Logf("TIMING agent %s restarted and joined in %v, all healthy %v later", a.Name(), time.Since(began).Round(time.Millisecond)-hl.Round(time.Millisecond), hl.Round(time.Millisecond))
		st, err = a.State(ctx)
		require.NoError(t, err)
		require.True(t, st.Running)
		require.True(t, st.StartedAt.After(st.FinishedAt), "a new start after the kill: %+v", st)
		require.False(t, a.OOMKilled(), "running again")
	})

	t.Run("PauseAndDisconnectAnAgent", func(t *testing.T) {
		a := cl.Agents()[0]
		require.NoError(t, faults.MustNew("pause").Inject(ctx, a, 2*time.Second))
		healthy(t, "after pause")
		ip := a.IP()
		require.NoError(t, faults.MustNew("disconnect").Inject(ctx, a, 3*time.Second))
		if a.IP() != ip {
			t.Logf("reconnected at %s, was %s: restarting so that Consul advertises the new address", a.IP(), ip)
			require.NoError(t, a.Restart(ctx))
		}
		healthy(t, "after reconnect")
		require.Equal(t, "world", kvGet(t, ctx, a, "chaoslab/hello"))
	})

	t.Run("ReplaceAnAgent", func(t *testing.T) {
		a := cl.Agents()[0]
		old := a.ContainerID()
		began := time.Now()
		require.NoError(t, faults.MustNew("replace").Inject(ctx, a, 0))
		require.NotEqual(t, old, a.ContainerID())
		hl := healthy(t, "after replace")
		t.Logf("TIMING replace %s: joined in %v, all healthy %v later", a.Name(), time.Since(began).Round(time.Millisecond)-hl.Round(time.Millisecond), hl.Round(time.Millisecond))
		require.Equal(t, "world", kvGet(t, ctx, a, "chaoslab/hello"))
	})

	require.NoError(t, cl.Close())
	closed = true
	require.NoError(t, cl.Close(), "idempotent")
	requireNothingLeft(t, runID)
	require.Error(t, cl.Agents()[0].Restart(ctx), "nothing starts after Close")
	requireNothingLeft(t, runID)
}

// TestIntegration_ThreeServers starts 3 servers, pauses the leader until
// the other two elect one of them, and resumes it.
func TestIntegration_ThreeServers(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	begin := time.Now()
	cl, err := StartCluster(ctx, Options{Servers: 3, Image: img, RunID: runID, LogDir: t.TempDir(), Logger: testLogger(t), RaftMultiplier: 1})
	require.NoError(t, err)
	t.Logf("TIMING start 3 servers to healthy: %v", time.Since(begin).Round(time.Millisecond))
	defer cl.Close()
	l, err := cl.Leader(ctx)
	require.NoError(t, err)
	began := time.Now()
	require.NoError(t, l.Pause())
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	nl, err := cl.Leader(lctx)
	lcancel()
	require.NoError(t, err)
	require.NotEqual(t, l, nl)
	t.Logf("TIMING new leader %s (stable) %v after pausing %s", nl.Name(), time.Since(began).Round(time.Millisecond), l.Name())
	require.NoError(t, l.Resume())
	resumed := time.Now()
	hctx, hcancel := context.WithTimeout(ctx, 45*time.Second)
	require.NoError(t, cl.WaitHealthy(hctx))
	hcancel()
	t.Logf("TIMING healthy %v after resuming %s", time.Since(resumed).Round(time.Millisecond), l.Name())
	require.NoError(t, cl.Close())
	requireNothingLeft(t, runID)
}

// TestIntegration_Run starts one server with Run alone (it elects itself)
// and leaves it behind as a crashed run would: Sweep removes it.
func TestIntegration_Run(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	c, err := Run(ctx, img, WithRunID(runID), WithRaftMultiplier(1))
	require.NoError(t, err, "a lone server has elected itself when Run returns")
	l, err := c.Leader(ctx)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(l, ":8300"), l)
	ms, err := c.Members(ctx)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Equal(t, "server1", ms[0].Name)
	cli, err := c.NewClient(ctx)
	require.NoError(t, err)
	kvPut(t, ctx, cli, "k", "v")
	swept, err := docker.Sweep(ctx, runID)
	require.NoError(t, err)
	require.Len(t, swept.Containers, 1)
	requireNothingLeft(t, runID)
}
