package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// KillRestart kills the target's process (SIGKILL) and starts it again with
// the same configuration and data after the duration: a crashed server that
// a supervisor brings back.
type KillRestart struct {
	// StartTimeout bounds the restart.
	StartTimeout Duration `yaml:"start_timeout"`
}

func init() {
	Register(func() Fault { return &KillRestart{StartTimeout: Duration(60 * time.Second)} })
}

// Check bounds the wait for the target to come back.
func (f *KillRestart) Check() []lab.Problem {
	var ps lab.Checks
	ps.Msg("start_timeout", lab.CheckDuration(f.StartTimeout, time.Second, "the least a server takes to start"))
	return ps
}

func (*KillRestart) Name() string { return "kill-restart" }

func (*KillRestart) Available(t Target) error {
	if t == nil {
		return fmt.Errorf("kill-restart: no target")
	}
	return nil
}

func (k *KillRestart) Inject(ctx context.Context, t Target, d time.Duration) error {
	if exitedBefore(ctx, t, "kill") {
		Sleep(ctx, d)
		return nil
	}
	if err := t.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", t.Name(), err)
	}
	proveState(ctx, t, lab.StateExited)
	Sleep(ctx, d)
	// Restore even when the run is being interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.StartTimeout.D())
	defer cancel()
	if err := t.Restart(rctx); err != nil {
		return fmt.Errorf("restart %s: %w", t.Name(), err)
	}
	return nil
}
