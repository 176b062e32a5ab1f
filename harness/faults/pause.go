package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Pause stops the target's process (SIGSTOP) and continues it (SIGCONT)
// after the duration: the stand-in for a server stalled by CPU starvation or
// a long GC pause. The process keeps its sockets; peers and clients see
// silence, not a closed connection.
type Pause struct{}

func init() { Register(func() Fault { return &Pause{} }) }

func (*Pause) Name() string { return "pause" }

func (*Pause) Available(t Target) error {
	if t == nil {
		return fmt.Errorf("pause: no target")
	}
	return nil
}

func (*Pause) Inject(ctx context.Context, t Target, d time.Duration) error {
	if exitedBefore(ctx, t, "pause") {
		Sleep(ctx, d)
		return nil
	}
	if err := t.Pause(); err != nil {
		return fmt.Errorf("pause %s: %w", t.Name(), err)
	}
	proveState(ctx, t, lab.StatePaused)
	Sleep(ctx, d)
	if err := t.Resume(); err != nil {
		return fmt.Errorf("resume %s: %w", t.Name(), err)
	}
	return nil
}
