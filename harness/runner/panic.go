package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a panic recovered during a run. The run stops as on
// Ctrl-C: every process, cgroup, container and network it started is
// removed, and its report is written marked aborted.
type PanicError struct {
	// Where is the part of the run that panicked (the sampler, a
	// variant's pipeline, a fault).
	Where string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic in %s: %v", e.Where, e.Value) }

// aborter stops a run from any of its goroutines.
type aborter struct {
	cancel context.CancelCauseFunc
	log    *slog.Logger
}

// panicked records a recovered panic: logged with its stack, and the
// run cancelled with it as the cause.
func (a *aborter) panicked(where string, x any) *PanicError {
	e := &PanicError{Where: where, Value: x, Stack: debug.Stack()}
	if a.log != nil {
		a.log.Error("run aborted by a panic; stopping and cleaning up", "where", where, "panic", fmt.Sprint(x))
		a.log.Debug("panic stack", "where", where, "stack", string(e.Stack))
	}
	if a.cancel != nil {
		a.cancel(e)
	}
	return e
}

// catch, deferred at the top of a goroutine of the run, turns a panic
// there into the run's abort.
func (a *aborter) catch(where string) {
	if x := recover(); x != nil {
		a.panicked(where, x)
	}
}

// abortReason says why a variant was aborted: a panic, or the
// interruption that cancelled ctx.
func abortReason(ctx context.Context) string {
	cause := context.Cause(ctx)
	if pe := (*PanicError)(nil); errors.As(cause, &pe) {
		return pe.Error()
	}
	return "interrupted: " + cause.Error()
}

// panicOf is the panic that aborted the run, if one did.
func panicOf(ctx context.Context) error {
	if pe := (*PanicError)(nil); errors.As(context.Cause(ctx), &pe) {
		return pe
	}
	return nil
}
