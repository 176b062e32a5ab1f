package faults

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// CPULimiter is a target whose CPU can be limited while it runs (a
// server of any placement: its cgroup's quota, or docker update --cpus).
// cores <= 0 lifts the limit.
type CPULimiter interface {
	LimitCPU(cores float64) error
}

// CPULimitReader is a CPULimiter that can tell its current limit (0: none),
// so that CPUThrottle restores it rather than lifting every limit.
type CPULimitReader interface {
	CPULimit() (float64, error)
}

func init() { Register(func() Fault { return &CPUThrottle{Cores: 0.1} }) }

// CPUThrottle holds the target to a slice of a core for the duration, then
// restores its previous limit (none, usually): the "high CPU on the leader"
// of IL-0587, where the server still runs, slowly, rather than stopping
// (compare pause).
type CPUThrottle struct {
	// Cores is the CPU limit during the fault, in cores.
	Cores float64 `yaml:"cores"`
}

// Check refuses a limit the kernel or the engine cannot give.
func (c *CPUThrottle) Check() []lab.Problem {
	var ps lab.Checks
	ps.Msg("cores", lab.CheckCPUs(c.Cores, false))
	return ps
}

func (*CPUThrottle) Name() string { return "cpu-throttle" }

func (c *CPUThrottle) Available(t Target) error {
	if t == nil {
		return errors.New("cpu-throttle: no target")
	}
	if _, ok := t.(CPULimiter); !ok {
		return fmt.Errorf("cpu-throttle: %s cannot have its CPU limited while it runs", t.Name())
	}
	return nil
}

func (c *CPUThrottle) Inject(ctx context.Context, t Target, d time.Duration) error {
	if err := c.Available(t); err != nil {
		return err
	}
	l := t.(CPULimiter)
	before := 0.0
	if r, ok := t.(CPULimitReader); ok {
		v, err := r.CPULimit()
		if err != nil {
			return fmt.Errorf("read cpu limit of %s: %w", t.Name(), err)
		}
		before = v
	}
	if err := l.LimitCPU(c.Cores); err != nil {
		return fmt.Errorf("limit cpu of %s: %w", t.Name(), err)
	}
	c.prove(ctx, t)
	Sleep(ctx, d)
	// Restore even when the run is being interrupted.
	if err := l.LimitCPU(before); err != nil {
		return fmt.Errorf("restore cpu of %s: %w", t.Name(), err)
	}
	return nil
}

// prove reads the limit back: the cgroup's quota, or the engine's.
func (c *CPUThrottle) prove(ctx context.Context, t Target) {
	r, ok := t.(CPULimitReader)
	if !ok {
		Unverified(ctx, t, "%s's CPU limit cannot be read back", t.Name())
		return
	}
	got, err := r.CPULimit()
	switch {
	case err != nil:
		Unverified(ctx, t, "CPU limit not read back: %v", err)
	case math.Abs(got-c.Cores) < 0.01:
		Landed(ctx, t, "CPU limit %.2f cores, read back", got)
	default:
		Missed(ctx, t, "CPU limit %.2f cores read back, want %.2f", got, c.Cores)
	}
}
