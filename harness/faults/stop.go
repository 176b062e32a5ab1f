package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Stop takes the target out for the duration and brings it back: clients
// an operator scales down (their supervisor does not restart them
// meanwhile; IL-0277's responders cut client connections so that a quorum
// could form), or a server shut down for a while. A target that cannot be
// held down (a server) is killed and started again with its data.
type Stop struct {
	// StartTimeout bounds the start at the end.
	StartTimeout Duration `yaml:"start_timeout"`
}

func init() {
	Register(func() Fault { return &Stop{StartTimeout: Duration(60 * time.Second)} })
}

// Check bounds the wait for the target to come back.
func (f *Stop) Check() []lab.Problem {
	var ps lab.Checks
	ps.Msg("start_timeout", lab.CheckDuration(f.StartTimeout, time.Second, "the least a server takes to start"))
	return ps
}

func (*Stop) Name() string { return "stop" }

func (*Stop) Available(t Target) error {
	if t == nil {
		return fmt.Errorf("stop: no target")
	}
	return nil
}

func (f *Stop) Inject(ctx context.Context, t Target, d time.Duration) error {
	s, held := t.(lab.Stopper)
	stop, start := t.Kill, t.Restart
	if held {
		stop, start = s.Stop, s.Start
	}
	if !held && exitedBefore(ctx, t, "stop") {
		Sleep(ctx, d)
		return nil
	}
	if err := stop(); err != nil {
		return fmt.Errorf("stop %s: %w", t.Name(), err)
	}
	proveState(ctx, t, lab.StateExited)
	Sleep(ctx, d)
	// Bring it back even when the run is being interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.StartTimeout.D())
	defer cancel()
	if err := start(rctx); err != nil {
		return fmt.Errorf("start %s: %w", t.Name(), err)
	}
	return nil
}
