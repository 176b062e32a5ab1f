package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// MemoryLimiter is a target under a memory limit that can be changed while
// it runs: a Consul client agent in its pod's cgroup or container.
type MemoryLimiter interface {
	// MemoryLimit is the limit in bytes (0: none; negative: not known
	// yet, as of a probe before the run).
	MemoryLimit() int64
	SetMemoryLimit(bytes int64) error
}

// SetMemoryLimit sets the target's memory limit to MB for the duration,
// then puts the old one back: IL-0206's responders raised the pod limit
// from 500 MB to 1 GB so that the agents survived their spikes.
type SetMemoryLimit struct {
	// MB is the limit while the fault lasts, in MiB.
	MB int `yaml:"mb"`
}

func init() { Register(func() Fault { return &SetMemoryLimit{MB: 1024} }) }

// Check wants a limit a Go program starts in.
func (f *SetMemoryLimit) Check() []lab.Problem {
	var ps lab.Checks
	ps.Need(f.MB >= lab.MinGoMemoryMB && f.MB <= 1<<20, "mb", "want %d MiB to 1 TiB, got %d", lab.MinGoMemoryMB, f.MB)
	return ps
}

func (*SetMemoryLimit) Name() string { return "set-memory-limit" }

// ResponderKind: raising a pod's limit was IL-0206's fix.
func (*SetMemoryLimit) ResponderKind(string) string { return "raise-memory-limit" }

func (*SetMemoryLimit) Available(t Target) error {
	m, ok := t.(MemoryLimiter)
	switch {
	case !ok:
		return fmt.Errorf("set-memory-limit: %s has no memory limit the lab can change", t.Name())
	case m.MemoryLimit() == 0:
		return fmt.Errorf("set-memory-limit: %s runs without a memory limit", t.Name())
	}
	return nil
}

func (f *SetMemoryLimit) Inject(ctx context.Context, t Target, d time.Duration) error {
	m := t.(MemoryLimiter)
	old := m.MemoryLimit()
	if err := m.SetMemoryLimit(int64(f.MB) << 20); err != nil {
		return fmt.Errorf("set memory limit of %s: %w", t.Name(), err)
	}
	Record(t, "memory-limit", fmt.Sprintf("memory limit %d MiB (was %d MiB)", f.MB, old>>20))
	switch got := m.MemoryLimit(); {
	case got < 0:
		Unverified(ctx, t, "memory limit not readable now (%s may be restarting)", t.Name())
	case got>>20 == int64(f.MB):
		Landed(ctx, t, "memory limit %d MiB, read back", got>>20)
	default:
		Missed(ctx, t, "memory limit %d MiB read back, want %d", got>>20, f.MB)
	}
	Sleep(ctx, d)
	if err := m.SetMemoryLimit(old); err != nil {
		return fmt.Errorf("restore memory limit of %s: %w", t.Name(), err)
	}
	Record(t, "memory-limit", fmt.Sprintf("memory limit back to %d MiB", old>>20))
	return nil
}
