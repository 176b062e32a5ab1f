package zookeeper

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// InitLimiter is a ZooKeeper server whose zoo.cfg the lab writes: its
// initLimit can be rewritten, and takes effect at its next start.
type InitLimiter interface {
	// InitLimit is the initLimit in its zoo.cfg, in ticks.
	InitLimit() (int, error)
	// SetInitLimit rewrites it; ZooKeeper reads it only at start.
	SetInitLimit(ticks int) error
}

// RaiseInitLimit is IL-0277's responders' fix for the observer tier: the
// target servers' initLimit is rewritten in their zoo.cfg and the servers
// restarted (ZooKeeper 3.8 reads initLimit only at start), so that a
// server has that many ticks to sync with the leader. The change is for
// good; the fault waits for the servers to sync (the deep gate: following
// or observing, caught up, counted synced by the leader) for up to the
// duration, and records how long that took.
type RaiseInitLimit struct {
	// Ticks is the new initLimit, in ticks of tickTime.
	Ticks int `yaml:"ticks"`
	// StartTimeout bounds the restart (the server answering clients).
	StartTimeout faults.Duration `yaml:"start_timeout"`
}

func init() {
	faults.Register(func() faults.Fault {
		return &RaiseInitLimit{Ticks: 30, StartTimeout: faults.Duration(60 * time.Second)}
	})
}

func (*RaiseInitLimit) Name() string { return "raise-init-limit" }

// ResponderKind: IL-0277's responders raised initLimit on the observers.
func (*RaiseInitLimit) ResponderKind(string) string { return "raise-init-limit" }

// Check wants a limit ZooKeeper takes and a start it can make.
func (f *RaiseInitLimit) Check() []lab.Problem {
	var ps lab.Checks
	ps.Need(f.Ticks >= 1 && f.Ticks <= 10000, "ticks", "want 1 to 10000 ticks, got %d", f.Ticks)
	ps.Msg("start_timeout", lab.CheckDuration(f.StartTimeout, time.Second, "the least a server takes to start"))
	return ps
}

func (*RaiseInitLimit) Available(t faults.Target) error {
	if _, ok := t.(InitLimiter); !ok {
		return fmt.Errorf("raise-init-limit: %s is not a ZooKeeper server whose zoo.cfg the lab rewrites (local placement only)", faults.TargetName(t))
	}
	return nil
}

func (f *RaiseInitLimit) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	il := t.(InitLimiter)
	old, err := il.InitLimit()
	if err != nil {
		return fmt.Errorf("raise init limit of %s: %w", t.Name(), err)
	}
	if err := il.SetInitLimit(f.Ticks); err != nil {
		return fmt.Errorf("raise init limit of %s: %w", t.Name(), err)
	}
	began := time.Now()
	// The restart completes even when the run is being interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.StartTimeout.D())
	defer cancel()
	if err := t.Restart(rctx); err != nil {
		faults.Record(t, "init-limit", fmt.Sprintf("initLimit %d ticks (was %d); the restart failed: %v", f.Ticks, old, err))
		return fmt.Errorf("restart %s: %w", t.Name(), err)
	}
	served := time.Since(began)
	if now, err := il.InitLimit(); err == nil && now == f.Ticks {
		faults.Landed(ctx, t, "initLimit %d ticks in the zoo.cfg it was restarted with", now)
	} else {
		faults.Missed(ctx, t, "initLimit read back %d, want %d (%v)", now, f.Ticks, err)
	}
	detail := fmt.Sprintf("initLimit %d ticks (was %d); restarted, serving after %.1fs", f.Ticks, old, served.Seconds())
	if g, ok := t.(faults.Gater); ok {
		detail += "; " + f.synced(ctx, g, began, d)
	}
	faults.Record(t, "init-limit", detail)
	return nil
}

// synced waits up to d from began for the deep gate and says how it went.
func (f *RaiseInitLimit) synced(ctx context.Context, g faults.Gater, began time.Time, d time.Duration) string {
	wctx, cancel := context.WithDeadline(ctx, began.Add(max(d, time.Second)))
	defer cancel()
	var last error
	for {
		if last = g.GateCheck(wctx, faults.GateDeep); last == nil {
			return fmt.Sprintf("synced with the leader after %.1fs", time.Since(began).Seconds())
		}
		if !lab.Sleep(wctx, 250*time.Millisecond) {
			return fmt.Sprintf("not synced within %s: %v", d, last)
		}
	}
}
