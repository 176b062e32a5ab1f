package faults

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// procTarget is a real process of the test's own (sleep), so the faults act
// on something real without a cluster.
type procTarget struct {
	t   *testing.T
	mu  sync.Mutex
	cmd *exec.Cmd
	n   int // starts
}

func newProcTarget(t *testing.T) *procTarget {
	p := &procTarget{t: t}
	require.NoError(t, p.start())
	t.Cleanup(func() { p.mu.Lock(); defer p.mu.Unlock(); _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() })
	return p
}

func (p *procTarget) start() error {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd = cmd
	p.n++
	return nil
}

func (p *procTarget) pid() int { p.mu.Lock(); defer p.mu.Unlock(); return p.cmd.Process.Pid }

func (p *procTarget) Name() string  { return "sleep" }
func (p *procTarget) Pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *procTarget) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }
func (p *procTarget) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	return nil
}
func (p *procTarget) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start()
}

// state is the process state letter from /proc/PID/stat (T = stopped).
func state(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	require.NoError(t, err)
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRegistry(t *testing.T) {
	// This package registers the generic faults; a kind or a system
	// registers its incident's own from its package.
	require.Subset(t, Names(), Generic)
	require.IsNonDecreasing(t, Names())
	f, err := New("pause")
	require.NoError(t, err)
	require.Equal(t, "pause", f.Name())
	_, err = New("meteor")
	require.ErrorContains(t, err, `unknown fault "meteor" (known: `+strings.Join(Names(), ", ")+")")
	require.Panics(t, func() { Register(func() Fault { return &Pause{} }) })
	require.Error(t, fresh("pause").Available(nil))
}

func TestPauseStopsThenContinues(t *testing.T) {
	p := newProcTarget(t)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- fresh("pause").Inject(context.Background(), p, 600*time.Millisecond) }()
	require.Eventually(t, func() bool { return state(t, p.pid()) == "T" }, time.Second, 10*time.Millisecond, "stopped during the fault")
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, time.Since(start), 600*time.Millisecond)
	require.NotEqual(t, "T", state(t, p.pid()), "continued after the fault")
}

func TestPauseRestoresWhenInterrupted(t *testing.T) {
	p := newProcTarget(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	require.NoError(t, fresh("pause").Inject(ctx, p, time.Minute))
	require.Less(t, time.Since(start), 5*time.Second, "an interrupted fault ends early")
	require.NotEqual(t, "T", state(t, p.pid()), "a paused process is never left stopped")
}

func TestKillRestartReplacesTheProcess(t *testing.T) {
	p := newProcTarget(t)
	old := p.pid()
	require.NoError(t, fresh("kill-restart").Inject(context.Background(), p, 100*time.Millisecond))
	require.Equal(t, 2, p.n)
	require.NotEqual(t, old, p.pid())
	require.Contains(t, []string{"R", "S", "D"}, state(t, p.pid()), "the new process runs (D: still paging in its executable)")
	_, err := os.Stat("/proc/" + itoa(old) + "/stat")
	require.True(t, os.IsNotExist(err), "the killed process is gone")

	// Interrupted: still restarted.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, fresh("kill-restart").Inject(ctx, p, time.Minute))
	require.Equal(t, 3, p.n)
}

// fresh is a registered fault with its defaults.
func fresh(name string) Fault { return MustNew(name) }
