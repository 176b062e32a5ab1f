package zkensemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/freeport"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

type nopZKLogger struct{}

func (nopZKLogger) Printf(string, ...any) {}

func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(nopZKLogger{}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// roundTrip creates path with data and reads it back, retrying while the
// client (re)connects.
func roundTrip(t *testing.T, c *zk.Conn, path, data string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := c.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll))
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			break
		}
		require.True(t, time.Now().Before(deadline), "create %s: %v", path, err)
		time.Sleep(200 * time.Millisecond)
	}
	got, _, err := c.Get(path)
	require.NoError(t, err)
	require.Equal(t, data, string(got))
}

func TestIntegration_StartHealthyClient(t *testing.T) {
	e := startTest(t, Options{Servers: 3}, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	require.Len(t, e.Members, 3)
	require.Len(t, e.Servers(), 3)
	require.NoError(t, e.WaitHealthy(ctx))
	leader, err := e.Leader(ctx)
	require.NoError(t, err)
	followers, err := e.Followers(ctx)
	require.NoError(t, err)
	require.Len(t, followers, 2)
	require.NotContains(t, followers, leader)
	leaders := 0
	for _, m := range e.Members {
		require.True(t, m.Running())
		require.False(t, m.Paused())
		require.Positive(t, m.PID())
		st, err := m.State(ctx)
		require.NoError(t, err)
		if st == StateLeader {
			leaders++
		}
		ok, err := m.FourLetter(ctx, "ruok")
		require.NoError(t, err)
		require.Equal(t, "imok", ok)
	}
	require.Equal(t, 1, leaders)

	v, err := leader.Version(ctx)
	require.NoError(t, err)
	require.Contains(t, v, "3.")
	jv, err := Version(ctx, e.Options())
	require.NoError(t, err)
	t.Logf("mntr zk_version %q, jar version %q", v, jv)
	require.Contains(t, v, jv)

	begin := time.Now()
	c := connect(t, e.Servers())
	roundTrip(t, c, "/zkensemble-test", "hello")
	t.Logf("TIMING client connect+create+get: %v", time.Since(begin).Round(time.Millisecond))
}

func TestIntegration_PauseLeaderElectsNew(t *testing.T) {
	const pause = 12 * time.Second
	e := startTest(t, Options{Servers: 3, TickMS: 1000, InitLimit: 10, SyncLimit: 5}, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	old, err := e.Leader(ctx)
	require.NoError(t, err)
	var others []string
	for _, m := range e.Members {
		if m != old {
			others = append(others, m.ClientAddr)
		}
	}

	require.NoError(t, old.Pause())
	pausedAt := time.Now()
	require.True(t, old.Paused())
	require.True(t, old.Running())

	// While the old leader is stopped, the other two elect a new one.
	lctx, lcancel := context.WithDeadline(ctx, pausedAt.Add(pause-500*time.Millisecond))
	newLeader, err := e.Leader(lctx)
	lcancel()
	require.NoError(t, err, "no new leader while %s was paused", old.Name)
	require.NotEqual(t, old, newLeader)
	require.True(t, old.Paused())
	t.Logf("TIMING pause of leader %s to stable new leader %s: %v", old.Name, newLeader.Name, time.Since(pausedAt).Round(time.Millisecond))

	// The remaining members serve writes during the pause.
	c := connect(t, others)
	roundTrip(t, c, "/during-pause", "x")
	require.True(t, old.Paused())

	// WaitHealthy names the paused member.
	hctx, hcancel := context.WithTimeout(ctx, time.Second)
	err = e.WaitHealthy(hctx)
	hcancel()
	require.ErrorContains(t, err, old.Name+"=paused")

	time.Sleep(time.Until(pausedAt.Add(pause)))
	require.NoError(t, old.Resume())
	resumedAt := time.Now()
	require.False(t, old.Paused())
	hctx, hcancel = context.WithTimeout(ctx, 30*time.Second)
	defer hcancel()
	require.NoError(t, e.WaitHealthy(hctx))
	t.Logf("TIMING resume of %s to healthy: %v", old.Name, time.Since(resumedAt).Round(time.Millisecond))

	l, err := e.Leader(ctx)
	require.NoError(t, err)
	require.NotEqual(t, old, l)
	followers, err := e.Followers(ctx)
	require.NoError(t, err)
	require.Contains(t, followers, old, "old leader %s does not follow", old.Name)
	st, err := old.State(ctx)
	require.NoError(t, err)
	require.Equal(t, StateFollower, st)
}

func TestIntegration_KillRestartFollower(t *testing.T) {
	e := startTest(t, Options{Servers: 3, TickMS: 1000}, 60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	followers, err := e.Followers(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, followers)
	f := followers[0]
	pid := f.PID()
	require.Positive(t, pid)

	begin := time.Now()
	require.NoError(t, f.Kill())
	t.Logf("TIMING kill %s (pid %d): %v", f.Name, pid, time.Since(begin).Round(time.Millisecond))
	require.False(t, f.Running())
	require.Zero(t, f.PID())
	require.False(t, pidAlive(pid))
	require.ErrorIs(t, f.Kill(), ErrNotRunning)
	require.ErrorIs(t, f.Pause(), ErrNotRunning)

	// The two others keep a quorum; a killed member does not count.
	require.NoError(t, e.WaitHealthy(ctx))
	c := connect(t, e.Servers())
	roundTrip(t, c, "/while-killed", "y")

	begin = time.Now()
	require.NoError(t, f.Restart(ctx))
	t.Logf("TIMING restart %s to serving: %v", f.Name, time.Since(begin).Round(time.Millisecond))
	require.NoError(t, e.WaitHealthy(ctx))
	t.Logf("TIMING restart %s to healthy: %v", f.Name, time.Since(begin).Round(time.Millisecond))
	require.NotEqual(t, pid, f.PID())
	st, err := f.State(ctx)
	require.NoError(t, err)
	require.Equal(t, StateFollower, st)

	// The restarted member has the data written while it was down.
	c2 := connect(t, []string{f.ClientAddr})
	got, _, err := c2.Get("/while-killed")
	require.NoError(t, err)
	require.Equal(t, "y", string(got))
}

func TestIntegration_CloseLeavesNoProcess(t *testing.T) {
	e := startTest(t, Options{Servers: 3, TickMS: 1000}, 60*time.Second)
	var pids []int
	for _, m := range e.Members {
		pids = append(pids, m.PID())
	}
	require.NotEmpty(t, procsWithArg(e.Dir))
	// A paused member must be killed too.
	require.NoError(t, e.Members[0].Pause())

	begin := time.Now()
	require.NoError(t, e.Close())
	t.Logf("TIMING close: %v", time.Since(begin).Round(time.Millisecond))
	require.NoError(t, e.Close(), "Close is idempotent")

	for i, pid := range pids {
		require.Positive(t, pid)
		require.False(t, pidAlive(pid), "pid %d still alive", pid)
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH)
		require.False(t, e.Members[i].Running())
	}
	require.Empty(t, procsWithArg(e.Dir), "processes with our run dir in their command line")
	require.FileExists(t, e.Members[0].LogPath(), "logs are kept after Close")
	require.ErrorContains(t, e.Members[1].Restart(context.Background()), "ensemble closed")
}

func TestIntegration_PortCollisionRetried(t *testing.T) {
	requireIntegration(t)
	// Hold the first client port picked so that the first attempt fails.
	var held net.Listener
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ps, err := freeport.Loopback(n)
		if err == nil && calls == 1 {
			held, err = net.Listen("tcp", addr(ps[0]))
		}
		return ps, err
	}
	t.Cleanup(func() {
		pickPorts = freeport.Loopback
		if held != nil {
			held.Close()
		}
	})
	begin := time.Now()
	e := startTest(t, Options{Servers: 1}, 60*time.Second)
	t.Logf("TIMING standalone start with one port collision: %v", time.Since(begin).Round(time.Millisecond))
	require.Equal(t, 2, calls)
	require.NotEqual(t, held.Addr().String(), e.Members[0].ClientAddr)
	l, err := e.Leader(context.Background())
	require.NoError(t, err)
	require.Equal(t, e.Members[0], l)
	st, err := l.State(context.Background())
	require.NoError(t, err)
	require.Equal(t, StateStandalone, st)
}

// TestHelperProcess is not a test: TestIntegration_ParentDeathKillsServers
// runs the test binary again with ZKENSEMBLE_HELPER_DIR set, and this starts
// a standalone server there, writes its pid and waits to be killed.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("ZKENSEMBLE_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process for TestIntegration_ParentDeathKillsServers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Start(ctx, Options{Servers: 1, Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(e.Members[0].PID())), 0o644))
	time.Sleep(time.Minute)
	os.Exit(3) // never returns normally: the parent kills us first
}

func TestIntegration_ParentDeathKillsServers(t *testing.T) {
	requireIntegration(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "ZKENSEMBLE_HELPER_DIR="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "helper did not start a server")
	require.True(t, pidAlive(pid))
	require.Contains(t, procsWithArg(dir), pid)
	t.Cleanup(func() {
		// Last resort if Pdeathsig did not work: only a JVM with our run
		// folder in its command line.
		if slices.Contains(procsWithArg(dir), pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	begin := time.Now()
	require.NoError(t, cmd.Process.Kill()) // the harness crashes
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return !pidAlive(pid) }, 10*time.Second, 20*time.Millisecond,
		"server pid %d outlived its parent", pid)
	t.Logf("TIMING parent SIGKILL to server gone: %v", time.Since(begin).Round(time.Millisecond))
	require.Empty(t, procsWithArg(dir))
}
