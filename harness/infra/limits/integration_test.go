package limits

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/tier"
)

// helperEnv makes the test binary act as a child program (see runHelper).
const helperEnv = "LIMITS_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0)
	}
	tier.Main(m, nil)
}

// runHelper is the child side of the integration tests.
func runHelper(mode string) {
	switch mode {
	case "alloc":
		// Allocate and touch 10 MB per step, keeping everything.
		const step = 10 << 20
		var keep [][]byte
		for i := 1; i <= 100; i++ {
			b := make([]byte, step)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i)
			}
			keep = append(keep, b)
			fmt.Printf("allocated %d MB\n", i*10)
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Println("survived", len(keep))
	case "spawn":
		// Start processes until the kernel refuses one, then stay alive.
		var kids []*exec.Cmd
		for i := 0; i < 200; i++ {
			c := exec.Command("sleep", "60")
			if err := c.Start(); err != nil {
				fmt.Printf("spawned %d; spawn failed: %v\n", len(kids), err)
				break
			}
			kids = append(kids, c)
		}
		fmt.Println("waiting")
		time.Sleep(60 * time.Second)
	case "threads":
		// Pin goroutines to OS threads until the runtime cannot make one.
		for i := 1; i <= 200; i++ {
			ready := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(ready)
				select {}
			}()
			<-ready
			fmt.Printf("threads %d\n", i)
		}
		fmt.Println("survived")
	case "spin":
		// Burn one CPU for one second of wall time, then say how much CPU it got.
		start := time.Now()
		x := 0
		for time.Since(start) < time.Second {
			for i := 0; i < 100000; i++ {
				x += i
			}
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		fmt.Printf("cpu %.3f %d\n", cpu.Seconds(), x%2)
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		os.Exit(3)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// needCgroups skips integration tests where they cannot run.
func needCgroups(t *testing.T) Mode {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root")
	}
	mode, reason := Detect()
	if mode == ModeNone {
		t.Skipf("integration test: no usable cgroups: %s", reason)
	}
	return mode
}

func newTestManager(t *testing.T, name string) *Manager {
	t.Helper()
	runID := fmt.Sprintf("test-%d-%s-%d", os.Getpid(), name, time.Now().UnixNano()%1e6)
	m, err := NewManager(runID, testLogger(t))
	require.NoError(t, err)
	require.NotEqual(t, ModeNone, m.Mode(), m.Reason())
	t.Cleanup(func() {
		require.NoError(t, m.Close())
		for _, d := range m.layout.baseDirs() {
			_, err := os.Stat(filepath.Join(d, runID))
			require.True(t, errors.Is(err, fs.ErrNotExist), "run group %s left behind", filepath.Join(d, runID))
		}
	})
	return m
}

func helperCmd(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "GOMAXPROCS=2")
	return cmd
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func requireSIGKILL(t *testing.T, err error) {
	t.Helper()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "want an exit by signal, got %v", err)
	ws := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "not killed by a signal: %v", ws)
	require.Equal(t, syscall.SIGKILL, ws.Signal())
}

func TestIntegration_OOMKill(t *testing.T) {
	needCgroups(t)
	m := newTestManager(t, "oom")
	const limit = 32 << 20
	g, err := m.NewGroup("oomer", Limits{MemoryBytes: limit, PidsMax: 64})
	require.NoError(t, err)

	var out syncBuffer
	cmd := helperCmd("alloc")
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(t, g.Start(cmd))
	startTook := time.Since(start)
	require.True(t, g.Contains(cmd.Process.Pid), "child not in %s", g.Path())
	require.False(t, g.Contains(os.Getpid()), "the launching thread must leave the group")

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("child not killed within 60s; output:\n%s", out.String())
	}
	elapsed := time.Since(start)
	requireSIGKILL(t, waitErr)
	require.NotContains(t, out.String(), "survived")

	st, err := g.Stats()
	require.NoError(t, err)
	require.True(t, st.Enforced)
	require.GreaterOrEqual(t, st.OOMKills, uint64(1), "%+v", st)
	require.GreaterOrEqual(t, st.OOMEvents, uint64(1), "%+v", st)
	// The peak reaches the limit; a dying OOM victim may force-charge a few pages past it.
	require.GreaterOrEqual(t, st.MemoryMaxBytes, int64(limit)*3/4, "%+v", st)
	require.LessOrEqual(t, st.MemoryMaxBytes, int64(limit)+int64(limit)/8, "%+v", st)
	require.EqualValues(t, limit, st.MemoryLimitBytes)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	t.Logf("Start took %s; OOM kill %s after start; last output %q; stats %+v",
		startTook.Round(time.Microsecond), elapsed.Round(time.Millisecond), lines[len(lines)-1], st)

	ok, line := KernelOOMKilled(cmd.Process.Pid, start)
	t.Logf("kernel log: %v: %s", ok, line)
	if !strings.HasPrefix(line, "kernel log unavailable") {
		require.True(t, ok, line)
		require.Contains(t, line, fmt.Sprintf("Killed process %d ", cmd.Process.Pid))
	}

	require.NoError(t, g.Delete())
	after, err := g.Stats()
	require.NoError(t, err)
	require.Equal(t, st.OOMKills, after.OOMKills, "counters kept after Delete")
}

func TestIntegration_PidsLimit(t *testing.T) {
	needCgroups(t)
	m := newTestManager(t, "pids")
	const max = 20

	for _, mode := range []string{"spawn", "threads"} {
		t.Run(mode, func(t *testing.T) {
			g, err := m.NewGroup(mode, Limits{MemoryBytes: 256 << 20, PidsMax: max})
			require.NoError(t, err)
			st, err := g.Stats()
			require.NoError(t, err)
			if !st.PidsEnforced {
				t.Skip("pids controller not available")
			}
			require.EqualValues(t, max, st.PidsMax)

			// Sample pids.current while the child runs.
			stop := make(chan struct{})
			var peak int64
			var sampler sync.WaitGroup
			sampler.Add(1)
			go func() {
				defer sampler.Done()
				for {
					if s, err := g.Stats(); err == nil && s.Pids > peak {
						peak = s.Pids
					}
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
					}
				}
			}()

			cmd := helperCmd(mode)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			require.NoError(t, g.Start(cmd))
			lines := make(chan string, 1024)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var got []string
			timeout := time.After(30 * time.Second)
		read:
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						break read
					}
					got = append(got, l)
					if l == "waiting" {
						break read // spawn mode: the refusal was printed just before
					}
				case <-timeout:
					break read
				}
			}
			time.Sleep(50 * time.Millisecond) // let the sampler see the final state
			st, err = g.Stats()
			require.NoError(t, err)
			paths := g.Paths()
			_, err = os.Stat(filepath.Join(paths[len(paths)-1], "pids.events"))
			hasEvents := err == nil
			// Delete kills what is left (the spawn helper and its sleeps).
			require.NoError(t, g.Delete())
			waitErr := cmd.Wait()
			close(stop)
			sampler.Wait()

			all := strings.Join(got, "\n") + "\n" + stderr.String()
			t.Logf("%s: peak pids.current %d (limit %d), pids.events max %d, child exit %v; refusal: %s",
				mode, peak, max, st.PidsLimitHits, waitErr, refusalLine(all))
			require.LessOrEqual(t, peak, int64(max), "pids.current went over pids.max")
			require.Positive(t, peak)
			require.NotContains(t, all, "survived")
			refused := strings.Contains(all, "spawn failed: ") && strings.Contains(all, "resource temporarily unavailable") ||
				strings.Contains(all, "failed to create new OS thread") || // runtime, pure Go
				strings.Contains(all, "pthread_create failed: Resource temporarily unavailable") // runtime/cgo
			require.True(t, refused, "no sign that creating a task was refused:\n%s", all)
			if hasEvents {
				require.Positive(t, st.PidsLimitHits, "pids.events max")
			}
		})
	}
}

func refusalLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "failed") {
			return l
		}
	}
	return "(none)"
}

func procGone(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return true
	}
	st, err := p.Stat()
	return err != nil || st.State == "Z" || st.State == "X"
}

func TestIntegration_DeleteKillsLeftovers(t *testing.T) {
	needCgroups(t)
	m := newTestManager(t, "delete")
	g, err := m.NewGroup("left", Limits{MemoryBytes: 64 << 20, PidsMax: 16})
	require.NoError(t, err)
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & wait")
	require.NoError(t, g.Start(cmd))
	require.True(t, g.Contains(cmd.Process.Pid))
	require.False(t, g.Contains(os.Getpid()))

	var pids []int
	require.Eventually(t, func() bool {
		pids, err = g.Procs()
		return err == nil && len(pids) == 3
	}, 5*time.Second, 10*time.Millisecond, "want sh and two sleeps in the group")
	st, err := g.Stats()
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Pids, int64(3))
	require.Positive(t, st.MemoryBytes)

	paths := g.Paths()
	require.NotEmpty(t, paths)
	start := time.Now()
	require.NoError(t, g.Delete())
	t.Logf("Delete of %d processes took %s", len(pids), time.Since(start).Round(time.Microsecond))
	requireSIGKILL(t, cmd.Wait())
	for _, pid := range pids {
		require.True(t, procGone(pid), "pid %d still running", pid)
	}
	for _, p := range paths {
		_, err := os.Stat(p)
		require.True(t, errors.Is(err, fs.ErrNotExist), "%s still exists", p)
	}
	require.NoError(t, g.Delete(), "second Delete is a no-op")
	require.False(t, g.Contains(cmd.Process.Pid))
	require.Error(t, g.Add(os.Getpid()), "no Add after Delete")

	// Close deletes groups not yet deleted, with their processes.
	g2, err := m.NewGroup("left2", Limits{})
	require.NoError(t, err)
	cmd2 := exec.Command("sleep", "300")
	require.NoError(t, g2.Start(cmd2))
	require.NoError(t, m.Close())
	requireSIGKILL(t, cmd2.Wait())
	for _, p := range g2.Paths() {
		_, err := os.Stat(p)
		require.True(t, errors.Is(err, fs.ErrNotExist), "%s still exists", p)
	}
	require.NoError(t, m.Close(), "second Close")
}

func TestIntegration_Sweep(t *testing.T) {
	needCgroups(t)
	l := detectWith(hostEnv())
	gone := func(p string) bool {
		_, err := os.Stat(p)
		return errors.Is(err, fs.ErrNotExist)
	}
	allGone := func(dirs []string) bool {
		for _, d := range dirs {
			if !gone(filepath.Dir(d)) {
				return false
			}
		}
		return true
	}
	// leftover fakes the groups of an interrupted run: created under the
	// run's lock (as NewManager does), which is then dropped as by a dead process.
	leftover := func(run string, pid int) []string {
		t.Helper()
		lock, err := lockRun(run)
		require.NoError(t, err)
		defer unlockRun(lock, false)
		var dirs []string
		for _, b := range l.baseDirs() {
			d := filepath.Join(b, run, "client-0")
			// A concurrent Sweep may rmdir an empty chaoslab directory mid-way.
			require.Eventually(t, func() bool { return os.MkdirAll(d, 0o755) == nil }, 5*time.Second, 10*time.Millisecond)
			if pid > 0 {
				require.NoError(t, os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(fmt.Sprint(pid)), 0))
			}
			dirs = append(dirs, d)
			t.Cleanup(func() { _ = os.Remove(d); _ = os.Remove(filepath.Dir(d)) })
		}
		return dirs
	}

	// A live run's empty group must survive a sweep.
	live := newTestManager(t, "sweep-live")
	idle, err := live.NewGroup("idle", Limits{MemoryBytes: 16 << 20})
	require.NoError(t, err)

	// An empty leftover of an interrupted run.
	stale := fmt.Sprintf("test-%d-stale-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	staleDirs := leftover(stale, 0)
	// A leftover that still holds a process: reported, not killed, not removed.
	busyRun := fmt.Sprintf("test-%d-busy-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	sleeper := exec.Command("sleep", "300")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	busyDirs := leftover(busyRun, sleeper.Process.Pid)

	// A concurrent Sweep (another test binary) may hold a run's lock for a
	// moment and skip it, so sweep until this run was seen.
	var sweepErr error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sweepErr = Sweep(testLogger(t))
		if sweepErr != nil && strings.Contains(sweepErr.Error(), busyRun) && allGone(staleDirs) {
			break
		}
	}
	require.Error(t, sweepErr)
	require.ErrorIs(t, sweepErr, ErrLeftoverBusy)
	require.Contains(t, sweepErr.Error(), busyRun)
	for _, d := range staleDirs {
		require.True(t, gone(filepath.Dir(d)), "stale %s not swept", filepath.Dir(d))
	}
	for _, d := range busyDirs {
		require.DirExists(t, d)
	}
	require.False(t, procGone(sleeper.Process.Pid), "Sweep must not kill")
	require.DirExists(t, idle.Path(), "a live run's group was swept")

	// Once its process is gone the busy leftover is swept too.
	require.NoError(t, sleeper.Process.Kill())
	_ = sleeper.Wait()
	require.Eventually(t, func() bool {
		if err := Sweep(testLogger(t)); err != nil && !errors.Is(err, ErrLeftoverBusy) {
			return false
		}
		return allGone(busyDirs)
	}, 5*time.Second, 20*time.Millisecond)
	require.DirExists(t, idle.Path())
}

// TestIntegration_V2StartInside checks the cgroup v2 paths that need no
// controller — the child born inside its group (UseCgroupFD), Procs,
// cgroup.kill, removal — also on hybrid machines, on the controller-less
// unified hierarchy at /sys/fs/cgroup/unified.
func TestIntegration_V2StartInside(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root")
	}
	var mount string
	for _, p := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st syscall.Statfs_t
		if syscall.Statfs(p, &st) == nil && st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC
			mount = p
			break
		}
	}
	if mount == "" {
		t.Skip("no cgroup2 hierarchy mounted")
	}
	if !cloneIntoCgroupSupported() {
		t.Skip("kernel older than 5.7: no CLONE_INTO_CGROUP")
	}
	rel := fmt.Sprintf("/chaoslab-limits-test-%d", os.Getpid())
	mgr, err := cgroup2.NewManager(mount, rel, &cgroup2.Resources{})
	require.NoError(t, err)
	dir := filepath.Join(mount, rel)
	t.Cleanup(func() { _ = os.Remove(dir) })
	m := &Manager{runID: "v2test", logger: testLogger(t), layout: layout{mode: ModeV2, unified: mount}}
	g := &Group{m: m, name: "v2test", mode: ModeV2, dir: dir, v2: mgr, logger: m.logger, oomFD: -1}

	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 & wait")
	require.NoError(t, g.Start(cmd))
	require.NotNil(t, cmd.SysProcAttr)
	require.True(t, cmd.SysProcAttr.UseCgroupFD, "child must be born inside the group")
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	require.NoError(t, err)
	cg, err := parseProcCgroup(string(b))
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(cg[""], rel), "child in %q, want %q", cg[""], rel)
	require.Eventually(t, func() bool {
		p, err := g.Procs()
		return err == nil && len(p) == 3
	}, 5*time.Second, 10*time.Millisecond)
	require.False(t, g.Contains(os.Getpid()))

	require.NoError(t, g.Delete())
	requireSIGKILL(t, cmd.Wait())
	_, err = os.Stat(dir)
	require.True(t, errors.Is(err, fs.ErrNotExist), "%s still exists", dir)
}

func TestIntegration_CPULimit(t *testing.T) {
	needCgroups(t)
	m := newTestManager(t, "cpu")
	g, err := m.NewGroup("spinner", Limits{MemoryBytes: 128 << 20, CPUCores: 0.2})
	require.NoError(t, err)
	require.Same(t, g, m.Group("spinner"))
	require.Nil(t, m.Group("nope"))
	st, err := g.Stats()
	require.NoError(t, err)
	if !st.CPUEnforced {
		t.Skip("cpu controller not available")
	}
	require.InDelta(t, 0.2, st.CPUCores, 1e-9)

	var out syncBuffer
	cmd := helperCmd("spin")
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, g.Start(cmd))
	require.NoError(t, cmd.Wait(), out.String())
	var cpu float64
	var x int
	_, err = fmt.Sscanf(strings.TrimSpace(out.String()), "cpu %f %d", &cpu, &x)
	require.NoError(t, err, out.String())
	st, err = g.Stats()
	require.NoError(t, err)
	t.Logf("CPU limit 0.2 cores: the spinner got %.3f s of CPU in 1 s; throttled %d periods, %.3f s", cpu, st.CPUThrottledPeriods, st.CPUThrottledSeconds)
	require.Less(t, cpu, 0.45, "CPU time not held near 0.2 s")
	require.Positive(t, st.CPUThrottledPeriods)
}

// TestIntegration_RunCPULimit holds two spinners, each allowed 0.9 cores,
// to 0.9 cores together with the run's budget (1.8 without it, on a host
// of 2 cores or more).
func TestIntegration_RunCPULimit(t *testing.T) {
	needCgroups(t)
	m := newTestManager(t, "runcpu")
	var groups []*Group
	for _, name := range []string{"a", "b"} {
		g, err := m.NewGroup(name, Limits{MemoryBytes: 128 << 20, CPUCores: 0.9})
		require.NoError(t, err)
		if st, _ := g.Stats(); !st.CPUEnforced {
			t.Skip("cpu controller not available")
		}
		groups = append(groups, g)
	}
	require.NoError(t, m.LimitCPU(0.9))
	require.Error(t, m.LimitCPU(0))
	outs := make([]*syncBuffer, len(groups))
	cmds := make([]*exec.Cmd, len(groups))
	for i, g := range groups {
		outs[i] = &syncBuffer{}
		cmds[i] = helperCmd("spin")
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		require.NoError(t, g.Start(cmds[i]))
	}
	total := 0.0
	for i, c := range cmds {
		require.NoError(t, c.Wait(), outs[i].String())
		var cpu float64
		var x int
		_, err := fmt.Sscanf(strings.TrimSpace(outs[i].String()), "cpu %f %d", &cpu, &x)
		require.NoError(t, err, outs[i].String())
		total += cpu
	}
	t.Logf("two spinners allowed 0.9 cores each, the run 0.9: %.3f s of CPU together in 1 s", total)
	require.Less(t, total, 1.3, "the run's CPU budget did not hold")
}

// A group's memory limit is raised while it holds no process and the
// kernel reports the new one.
func TestIntegration_SetMemoryLimit(t *testing.T) {
	needCgroups(t)
	m := newTestManager(t, "raise")
	g, err := m.NewGroup("pod", Limits{MemoryBytes: 32 << 20})
	require.NoError(t, err)
	require.EqualValues(t, 32<<20, g.MemoryLimit())
	require.NoError(t, g.SetMemoryLimit(64<<20))
	require.EqualValues(t, 64<<20, g.MemoryLimit())
	st, err := g.Stats()
	require.NoError(t, err)
	require.EqualValues(t, 64<<20, st.MemoryLimitBytes, "the kernel's limit")
	require.Error(t, g.SetMemoryLimit(0))
}
