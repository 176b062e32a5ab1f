package faults

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Replacer is a target that can be replaced by a fresh instance of itself:
// same identity (server id, name, address) and settings, empty data.
type Replacer interface {
	Replace(ctx context.Context) error
}

func init() {
	Register(func() Fault { return &Replace{StartTimeout: Duration(120 * time.Second)} })
}

// Replace stops the target, removes it with its data and starts a fresh one
// in its place that must catch up from its peers: one step of a rolling
// replacement (IL-0277). The replacement starts at once; the fault window
// lasts at least the duration (longer if the new member takes longer to
// serve). Only container targets support it.
type Replace struct {
	// StartTimeout bounds the replacement.
	StartTimeout Duration `yaml:"start_timeout"`
}

func (*Replace) Name() string { return "replace" }

func (*Replace) Available(t Target) error {
	if t == nil {
		return errors.New("replace: no target")
	}
	if _, ok := t.(Replacer); !ok {
		return fmt.Errorf("replace: %s cannot be replaced by a fresh instance (container members can; local processes cannot)", t.Name())
	}
	return nil
}

func (r *Replace) Inject(ctx context.Context, t Target, d time.Duration) error {
	if err := r.Available(t); err != nil {
		return err
	}
	began := time.Now()
	// Once the old member is gone the new one must come up, interrupted or not.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.StartTimeout.D())
	defer cancel()
	if err := t.(Replacer).Replace(rctx); err != nil {
		return fmt.Errorf("replace %s: %w", t.Name(), err)
	}
	if rest := d - time.Since(began); rest > 0 {
		sleep(ctx, rest)
	}
	return nil
}
