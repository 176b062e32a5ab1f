package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
)

// RestartFleet is the operator's recovery of IL-0384: every server of the
// fleet is restarted at the fleet's restart rate (a few hundred servers an
// hour in the incident; 0 = all at once), and a server that dies or fails
// its health checks afterwards goes back in the queue. The fault lasts
// until every server routes again or the duration is over; the restarts
// go on after it for the rest of the run.
type RestartFleet struct{}

func init() { faults.Register(func() faults.Fault { return &RestartFleet{} }) }

func (*RestartFleet) Name() string { return "restart-fleet" }

func (*RestartFleet) Available(t faults.Target) error {
	if _, ok := t.(CapacityTarget); !ok {
		return fmt.Errorf("restart-fleet: target %s is not a front-end fleet", faults.TargetName(t))
	}
	return nil
}

func (*RestartFleet) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	f := t.(CapacityTarget)
	var before map[string]ServerProc
	if r, ok := t.(ProcReader); ok {
		before = r.Procs()
	}
	if err := f.Restart(ctx); err != nil {
		return fmt.Errorf("restart fleet: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// Not recovering within d is a measurement, not a failure of the fault.
	_ = f.WaitReady(wctx)
	restarted(ctx, t, before)
	return nil
}

// ResponderKind: a restart of the fleet is the responders' restart.
func (*RestartFleet) ResponderKind(string) string { return "restart-fleet" }
