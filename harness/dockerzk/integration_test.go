package dockerzk

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
)

// TestImage is the stand-in image harness/dockerzk/testdata/build-test-image.sh
// builds where neither DefaultImage nor OfficialImage exists.
const TestImage = "chaoslab-dev/zookeeper:test"

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

// requireIntegration skips unless Docker answers and a ZooKeeper image is
// present; it returns the image: $CHAOSLAB_ZOOKEEPER_IMAGE,
// chaoslab/zookeeper:3.8.0-deb12, zookeeper:3.8 or chaoslab-dev/zookeeper:test.
func requireIntegration(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if err := docker.Available(context.Background()); err != nil {
		t.Skipf("integration test: no Docker engine: %v", err)
	}
	img, err := FindImage(context.Background(), TestImage)
	if err != nil {
		t.Skipf("integration test: no ZooKeeper image on this engine (%v): run `chaoslab images build`, or harness/dockerzk/testdata/build-test-image.sh for %s", err, TestImage)
	}
	return img
}

func testRunID(t *testing.T) string {
	return fmt.Sprintf("t-%s-%d", strings.ToLower(t.Name()[len("TestIntegration_"):]), time.Now().UnixNano()%1e6)
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	require.NoError(t, err, "docker %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// requireNothingLeft checks with the docker CLI that no container or
// network of the run exists.
func requireNothingLeft(t *testing.T, runID string) {
	t.Helper()
	f := "label=" + docker.LabelRun + "=" + runID
	require.Empty(t, dockerCLI(t, "ps", "-a", "-q", "--filter", f), "containers of run %s", runID)
	require.Empty(t, dockerCLI(t, "network", "ls", "-q", "--filter", f), "networks of run %s", runID)
	require.Empty(t, dockerCLI(t, "volume", "ls", "-q", "--filter", f), "volumes of run %s", runID)
}

type zkLog struct{ t *testing.T }

func (l zkLog) Printf(format string, args ...any) {}

func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(zkLog{t}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// readVia reads path through one server only (after a sync, so the server
// has caught up with the leader).
func readVia(t *testing.T, addr, path string) []byte {
	t.Helper()
	c := connect(t, []string{addr})
	defer c.Close()
	var data []byte
	require.Eventually(t, func() bool {
		if _, err := c.Sync(path); err != nil {
			return false
		}
		d, _, err := c.Get(path)
		data = d
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "read %s via %s", path, addr)
	return data
}

func inspect(t *testing.T, format, container string) string {
	t.Helper()
	return dockerCLI(t, "inspect", "-f", format, container)
}

// TestIntegration_Ensemble runs one 3-member ensemble through the faults
// in turn; each step ends with the ensemble healthy again.
func TestIntegration_Ensemble(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	log := testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	begin := time.Now()
	ens, err := StartEnsemble(ctx, EnsembleOptions{
		Servers: 3, Image: img, TickMS: 1000, InitLimit: 10, SyncLimit: 5, HeapMB: 192,
		RunID: runID, LogDir: t.TempDir(), Logger: log,
	})
	require.NoError(t, err)
	t.Logf("TIMING start 3 members to healthy: %v", time.Since(begin).Round(time.Millisecond))
	closed := false
	t.Cleanup(func() {
		if !closed {
			if t.Failed() {
				for _, m := range ens.Members() {
					t.Log(m.logTail(40))
				}
			}
			_ = ens.Close()
		}
		_, _ = docker.Sweep(context.Background(), runID)
	})
	healthy := func(t *testing.T, what string) time.Duration {
		t.Helper()
		began := time.Now()
		hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		require.NoError(t, ens.WaitHealthy(hctx), what)
		return time.Since(began)
	}

	t.Run("HealthyAndServesClients", func(t *testing.T) {
		require.Len(t, ens.Members(), 3)
		require.Len(t, ens.Servers(), 3)
		for i, m := range ens.Members() {
			require.Equal(t, i+1, m.ID())
			require.Equal(t, MemberName(i+1), m.Name())
			name := runID + "-" + m.Name()
			require.Equal(t, name, m.ContainerName())
			require.True(t, strings.HasPrefix(m.ClientAddr(), "127.0.0.1:"), m.ClientAddr())
			require.Equal(t, m.ClientAddr(), ens.Servers()[i])
			require.True(t, m.Running())
			require.False(t, m.Paused())
			// Labels, alias, environment and the port binding as the engine has them.
			require.Equal(t, runID+" true "+m.Name(), inspect(t, `{{index .Config.Labels "org.chaoslab.run"}} {{index .Config.Labels "org.chaoslab.managed"}} {{index .Config.Labels "org.chaoslab.member"}}`, name))
			require.Contains(t, inspect(t, `{{json .NetworkSettings.Networks}}`, name), `"`+m.Name()+`"`)
			env := inspect(t, `{{json .Config.Env}}`, name)
			for _, kv := range []string{"ZOO_MY_ID=" + strconv.Itoa(m.ID()), "ZOO_SERVERS=" + ServersValue(3), "ZOO_TICK_TIME=1000", "ZOO_SYNC_LIMIT=5", "ZOO_INIT_LIMIT=10", "ZOO_4LW_COMMANDS_WHITELIST=*", "JVMFLAGS=-Xmx192m", "ZOO_MAX_CLIENT_CNXNS=0"} {
				require.Contains(t, env, kv)
			}
			require.Equal(t, `[{"HostIp":"127.0.0.1","HostPort":"`+strings.TrimPrefix(m.ClientAddr(), "127.0.0.1:")+`"}]`, inspect(t, `{{json (index .NetworkSettings.Ports "2181/tcp")}}`, name))
			v, err := m.Version(ctx)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(v, "3."), v)
			st, err := m.State(ctx)
			require.NoError(t, err)
			require.True(t, st.Running)
			require.Equal(t, "running", st.Status)
		}
		require.Equal(t, ens.Network(), inspect(t, `{{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}`, runID+"-zk1"))
		require.Equal(t, runID, dockerCLI(t, "network", "inspect", "-f", `{{index .Labels "org.chaoslab.run"}}`, ens.Network()))

		c := connect(t, ens.Servers())
		_, err := c.Create("/chaoslab", []byte("hello"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		for _, addr := range ens.Servers() {
			require.Equal(t, "hello", string(readVia(t, addr, "/chaoslab")))
		}
		// The members wrote their logs into the run folder.
		for _, m := range ens.Members() {
			b, err := os.ReadFile(m.LogPath())
			require.NoError(t, err)
			require.Contains(t, string(b), "QuorumPeer")
		}
	})

	t.Run("CPUThrottleOnTheLeader", func(t *testing.T) {
		l, err := ens.Leader(ctx)
		require.NoError(t, err)
		name := l.ContainerName()
		require.Equal(t, "0", inspect(t, "{{.HostConfig.NanoCpus}}", name))
		done := make(chan error, 1)
		go func() { done <- (&faults.CPUThrottle{Cores: 0.1}).Inject(ctx, l, 4*time.Second) }()
		require.Eventually(t, func() bool { return inspect(t, "{{.HostConfig.NanoCpus}}", name) == "100000000" }, 3*time.Second, 50*time.Millisecond)
		cores, err := l.CPULimit()
		require.NoError(t, err)
		require.InDelta(t, 0.1, cores, 1e-9)
		require.NoError(t, <-done)
		// Restored: the engine cannot unset a CPU limit, so "none" is all CPUs.
		n, err := docker.HostCPUs(ctx)
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(n*1e9), inspect(t, "{{.HostConfig.NanoCpus}}", name))
		t.Logf("TIMING healthy after cpu-throttle: %v", healthy(t, "after cpu-throttle").Round(time.Millisecond))
	})

	t.Run("DisconnectAFollower", func(t *testing.T) {
		fs, err := ens.Followers(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, fs)
		f := fs[0]
		done := make(chan error, 1)
		go func() { done <- faults.MustNew("disconnect").Inject(ctx, f, 6*time.Second) }()
		require.Eventually(t, func() bool {
			return inspect(t, `{{len .NetworkSettings.Networks}}`, f.ContainerName()) == "0"
		}, 3*time.Second, 50*time.Millisecond)
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := ens.Leader(lctx)
		cancel()
		require.NoError(t, err, "the other two keep a leader")
		require.NotEqual(t, f, l)
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = f.Mntr(pctx)
		cancel()
		require.Error(t, err, "the disconnected member cannot be reached")
		require.NoError(t, <-done)
		require.Contains(t, inspect(t, `{{json .NetworkSettings.Networks}}`, f.ContainerName()), `"`+f.Name()+`"`)
		t.Logf("TIMING healthy after reconnect: %v", healthy(t, "after reconnect").Round(time.Millisecond))
		require.Contains(t, ens.Servers(), f.ClientAddr())
	})

	t.Run("ReplaceAFollower", func(t *testing.T) {
		c := connect(t, ens.Servers())
		_, err := c.Create("/before-replace", []byte("kept"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		c.Close()
		fs, err := ens.Followers(ctx)
		require.NoError(t, err)
		f := fs[0]
		oldID := f.ContainerID()
		began := time.Now()
		require.NoError(t, faults.MustNew("replace").Inject(ctx, f, 0))
		took := time.Since(began)
		require.NotEqual(t, oldID, f.ContainerID(), "a new container")
		require.Equal(t, runID+"-"+f.Name(), inspect(t, "{{.Name}}", f.ContainerID())[1:])
		hl := healthy(t, "after replace")
		t.Logf("TIMING replace %s until it serves: %v, then healthy in %v", f.Name(), took.Round(time.Millisecond), hl.Round(time.Millisecond))
		// The fresh member has the data from before through the sync with the leader.
		require.Equal(t, "kept", string(readVia(t, f.ClientAddr(), "/before-replace")))
		require.Equal(t, "hello", string(readVia(t, f.ClientAddr(), "/chaoslab")))
		b, err := os.ReadFile(f.LogPath())
		require.NoError(t, err)
		require.Contains(t, string(b), "replacing the container with a fresh one")
	})

	t.Run("KillAndRestartAFollower", func(t *testing.T) {
		fs, err := ens.Followers(ctx)
		require.NoError(t, err)
		f := fs[len(fs)-1]
		require.NoError(t, f.Kill())
		st, err := f.State(ctx)
		require.NoError(t, err)
		require.False(t, st.Running)
		require.Equal(t, 137, st.ExitCode)
		require.False(t, st.OOMKilled)
		require.False(t, f.Running())
		began := time.Now()
		require.NoError(t, f.Restart(ctx))
		t.Logf("TIMING restart %s until it serves: %v", f.Name(), time.Since(began).Round(time.Millisecond))
		require.Equal(t, ens.Servers()[f.ID()-1], f.ClientAddr())
		healthy(t, "after restart")
	})

	t.Run("PauseTheLeader", func(t *testing.T) {
		l, err := ens.Leader(ctx)
		require.NoError(t, err)
		began := time.Now()
		done := make(chan error, 1)
		go func() { done <- faults.MustNew("pause").Inject(ctx, l, 12*time.Second) }()
		require.Eventually(t, l.Paused, 3*time.Second, 20*time.Millisecond)
		require.Equal(t, "paused", inspect(t, "{{.State.Status}}", l.ContainerName()))
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = l.Mntr(pctx)
		cancel()
		require.Error(t, err, "a paused member does not answer")
		lctx, cancel := context.WithTimeout(ctx, 11*time.Second)
		nl, err := ens.Leader(lctx)
		cancel()
		require.NoError(t, err, "a new leader while the old one is paused")
		require.NotEqual(t, l, nl)
		t.Logf("TIMING new leader %s (stable) %v after pausing %s", nl.Name(), time.Since(began).Round(time.Millisecond), l.Name())
		require.NoError(t, <-done)
		resumed := time.Now()
		require.False(t, l.Paused())
		hl := healthy(t, "after resume")
		t.Logf("TIMING healthy %v after resuming %s (%v)", time.Since(resumed).Round(time.Millisecond), l.Name(), hl.Round(time.Millisecond))
	})

	// Close removes everything of the run.
	require.NoError(t, ens.Close())
	closed = true
	require.NoError(t, ens.Close(), "idempotent")
	requireNothingLeft(t, runID)
	require.Error(t, ens.Member(1).Restart(ctx), "nothing starts after Close")
	requireNothingLeft(t, runID)
}

// TestIntegration_OOMKill runs a server under a memory limit far below the
// heap it touches at start: the kernel kills it and the state says so.
func TestIntegration_OOMKill(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	began := time.Now()
	c, err := Run(ctx, img,
		WithRunID(runID), WithHeapMB(256), WithJVMFlags("-Xms256m", "-XX:+AlwaysPreTouch"),
		WithMemoryLimit(48<<20), WithStartupTimeout(60*time.Second),
		testcontainers.WithName(runID+"-zk1"),
	)
	require.Error(t, err, "the server never gets to answer")
	require.NotNil(t, c, "the container is returned with the error")
	require.Contains(t, err.Error(), "OOM killed true")
	st, err := c.RunState(ctx)
	require.NoError(t, err)
	require.True(t, st.OOMKilled, "%+v", st)
	require.Equal(t, 137, st.ExitCode)
	require.False(t, st.Running)
	require.Equal(t, "exited", st.Status)
	require.Equal(t, "true 137", inspect(t, "{{.State.OOMKilled}} {{.State.ExitCode}}", runID+"-zk1"))
	t.Logf("TIMING OOM kill reported %v after start", time.Since(began).Round(time.Millisecond))
	require.NoError(t, c.Terminate(ctx))
	requireNothingLeft(t, runID)
}

// TestIntegration_StandaloneAndSweep runs one standalone server with Run,
// changes its limits live, and then leaves it and its network behind as a
// crashed run would: Sweep removes both.
func TestIntegration_StandaloneAndSweep(t *testing.T) {
	img := requireIntegration(t)
	runID := testRunID(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	nw, err := network.New(ctx, network.WithLabels(docker.Labels(runID)))
	require.NoError(t, err)
	c, err := Run(ctx, img, WithRunID(runID), WithHeapMB(128), network.WithNetwork([]string{"zk1"}, nw),
		testcontainers.WithWaitStrategy(WaitForServing().WithStartupTimeout(60*time.Second)))
	require.NoError(t, err)
	kv, err := c.Mntr(ctx)
	require.NoError(t, err)
	require.Equal(t, StateStandalone, kv["zk_server_state"])
	out, err := c.FourLetter(ctx, "ruok")
	require.NoError(t, err)
	require.Equal(t, "imok", out)
	addr, err := c.ClientAddress(ctx)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
	id := c.GetContainerID()

	require.NoError(t, c.LimitCPU(ctx, 0.5))
	require.NoError(t, c.SetMemoryLimit(ctx, 1<<30))
	require.NoError(t, c.SetPidsLimit(ctx, 500))
	require.Equal(t, "500000000 1073741824 1073741824 500", inspect(t, "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}}", id))
	require.NoError(t, c.Pause(ctx))
	st, err := c.RunState(ctx)
	require.NoError(t, err)
	require.True(t, st.Paused)

	// "Crash": nothing is closed. Sweep removes the paused container and the network.
	require.NotEmpty(t, dockerCLI(t, "ps", "-a", "-q", "--filter", "label="+docker.LabelRun+"="+runID))
	swept, err := docker.Sweep(ctx, runID)
	require.NoError(t, err)
	require.Len(t, swept.Containers, 1)
	require.Equal(t, []string{nw.Name}, swept.Networks)
	requireNothingLeft(t, runID)
}
