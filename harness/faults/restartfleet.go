package faults

import (
	"context"
	"fmt"
	"time"
)

// RestartFleet is the operator's recovery of IL-0384: every server of the
// fleet is restarted at the fleet's restart rate (a few hundred servers an
// hour in the incident; 0 = all at once), and a server that dies or fails
// its health checks afterwards goes back in the queue. The fault lasts
// until every server routes again or the duration is over; the restarts
// go on after it for the rest of the run.
type RestartFleet struct{}

func init() { Register(func() Fault { return &RestartFleet{} }) }

func (*RestartFleet) Name() string { return "restart-fleet" }

func (*RestartFleet) Available(t Target) error {
	if _, ok := t.(Fleet); !ok {
		return fmt.Errorf("restart-fleet: target %s is not a front-end fleet", targetName(t))
	}
	return nil
}

func (*RestartFleet) Inject(ctx context.Context, t Target, d time.Duration) error {
	f := t.(Fleet)
	if err := f.Restart(ctx); err != nil {
		return fmt.Errorf("restart fleet: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// Not recovering within d is a measurement, not a failure of the fault.
	_ = f.WaitReady(wctx)
	return nil
}
