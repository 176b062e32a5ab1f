package faults

import (
	"context"
	"fmt"
	"time"
)

// Fleet is a front-end fleet as the fleet faults see it (IL-0384). The
// fleet is also a Target: Name is "fleet".
type Fleet interface {
	Name() string
	// AddCapacity starts the added servers and returns their names.
	AddCapacity(ctx context.Context) (added []string, err error)
	// RemoveCapacity stops the added servers and takes them out of the fleet.
	RemoveCapacity(ctx context.Context) error
	// Restart restarts every server at the fleet's restart rate; servers
	// that die or are removed later are restarted at the same pace.
	Restart(ctx context.Context) error
	// WaitReady waits until every server of the fleet routes.
	WaitReady(ctx context.Context) error
}

// AddCapacity adds servers to a front-end fleet for the duration, then
// removes them again: the incident's capacity addition (02:44-03:47 PST)
// and its removal as a precaution. What the addition does to the fleet's
// threads happens while it lasts; removing it does not restart anything.
type AddCapacity struct{}

func init() { Register(func() Fault { return &AddCapacity{} }) }

func (*AddCapacity) Name() string { return "add-capacity" }

func (*AddCapacity) Available(t Target) error {
	if _, ok := t.(Fleet); !ok {
		return fmt.Errorf("add-capacity: target %s is not a front-end fleet", targetName(t))
	}
	return nil
}

func (*AddCapacity) Inject(ctx context.Context, t Target, d time.Duration) error {
	f := t.(Fleet)
	if _, err := f.AddCapacity(ctx); err != nil {
		return fmt.Errorf("add capacity: %w", err)
	}
	sleep(ctx, d)
	if err := f.RemoveCapacity(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("remove capacity: %w", err)
	}
	return nil
}

func targetName(t Target) string {
	if t == nil {
		return "(none)"
	}
	return t.Name()
}
