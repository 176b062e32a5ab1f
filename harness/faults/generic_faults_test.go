package faults

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// containerTarget records what the generic faults do to it. It is a fake:
// real servers of every system and placement take them in
// harness/systems/contract.
type containerTarget struct {
	mu      sync.Mutex
	calls   []string
	limit   float64
	limits  []float64
	failure error
}

func (c *containerTarget) Record(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
}

func (c *containerTarget) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *containerTarget) Name() string                  { return "zk1" }
func (c *containerTarget) Pause() error                  { return nil }
func (c *containerTarget) Resume() error                 { return nil }
func (c *containerTarget) Kill() error                   { return nil }
func (c *containerTarget) Restart(context.Context) error { return nil }

func (c *containerTarget) LimitCPU(cores float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = cores
	c.limits = append(c.limits, cores)
	return nil
}

func (c *containerTarget) Replace(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Record("replace")
	return c.failure
}

func (c *containerTarget) Disconnect(ctx context.Context) error {
	c.Record("disconnect")
	return nil
}

func (c *containerTarget) Reconnect(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Record("reconnect")
	return nil
}

// withLimit also tells its current CPU limit.
type withLimit struct{ *containerTarget }

func (w withLimit) CPULimit() (float64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit, nil
}

// plainTarget is a Target without container capabilities (like a local
// process member).
type plainTarget struct{}

func (plainTarget) Name() string                  { return "zk2" }
func (plainTarget) Pause() error                  { return nil }
func (plainTarget) Resume() error                 { return nil }
func (plainTarget) Kill() error                   { return nil }
func (plainTarget) Restart(context.Context) error { return nil }

func TestGenericFaultsNeedTheirCapability(t *testing.T) {
	for _, f := range []Fault{fresh("cpu-throttle"), fresh("replace"), fresh("disconnect")} {
		require.ErrorContains(t, f.Available(nil), "no target", f.Name())
		err := f.Available(plainTarget{})
		require.ErrorContains(t, err, "zk2 cannot", f.Name())
		require.ErrorContains(t, err, "cannot", f.Name())
		require.NoError(t, f.Available(&containerTarget{}), f.Name())
		require.Error(t, f.Inject(context.Background(), plainTarget{}, 0), "Inject checks too: %s", f.Name())
	}
	require.Equal(t, []lab.Problem{{Field: "cores", Msg: "0 is below 0.01 CPUs, the least the kernel's CPU quota and the container engine give"}}, (&CPUThrottle{}).Check())
	require.Empty(t, (&CPUThrottle{Cores: 0.01}).Check())
	require.Equal(t, "cores", (&CPUThrottle{Cores: float64(lab.CPUs()) + 1}).Check()[0].Field, "more than the machine's CPUs")
	require.Equal(t, "start_timeout", (&KillRestart{StartTimeout: Duration(time.Millisecond)}).Check()[0].Field)
}

func TestCPUThrottleLimitsThenRestores(t *testing.T) {
	c := &containerTarget{}
	start := time.Now()
	require.NoError(t, (&CPUThrottle{Cores: 0.1}).Inject(context.Background(), c, 200*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.Equal(t, []float64{0.1, 0}, c.limits, "limited, then no limit")

	// A target that tells its limit gets its previous limit back.
	w := withLimit{&containerTarget{limit: 1.5}}
	require.NoError(t, (&CPUThrottle{Cores: 0.25}).Inject(context.Background(), w, 10*time.Millisecond))
	require.Equal(t, []float64{0.25, 1.5}, w.limits)
}

func TestCPUThrottleRestoresWhenInterrupted(t *testing.T) {
	c := &containerTarget{}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	require.NoError(t, (&CPUThrottle{Cores: 0.1}).Inject(ctx, c, time.Minute))
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, []float64{0.1, 0}, c.limits)
}

func TestReplaceReplacesAndHoldsTheWindow(t *testing.T) {
	c := &containerTarget{}
	start := time.Now()
	require.NoError(t, fresh("replace").Inject(context.Background(), c, 150*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	require.Equal(t, []string{"replace"}, c.Calls())

	// Interrupted before it began: the replacement still happens.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, fresh("replace").Inject(ctx, c, time.Minute))
	require.Equal(t, []string{"replace", "replace"}, c.Calls())

	c.failure = errors.New("boom")
	require.ErrorContains(t, fresh("replace").Inject(context.Background(), c, 0), "replace zk1: boom")
}

func TestDisconnectReconnects(t *testing.T) {
	c := &containerTarget{}
	start := time.Now()
	require.NoError(t, fresh("disconnect").Inject(context.Background(), c, 150*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	require.Equal(t, []string{"disconnect", "reconnect"}, c.Calls())

	// Interrupted: ends early, still reconnected.
	c = &containerTarget{}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	require.NoError(t, fresh("disconnect").Inject(ctx, c, time.Minute))
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, []string{"disconnect", "reconnect"}, c.Calls())
}
