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
// its health checks afterwards goes back in the queue. It landed when the
// servers were started again, and an all-at-once restart only when their
// first starts came within 4 s of each other (else the placement paced it).
//
// The fault lasts
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
	provePace(ctx, t)
	return nil
}

// ProofRevised: the pace of an all-at-once restart is proven since
// commit 0c7cfe7; before it, a restart the engine paced over 10 s and
// more was judged as if it were all at once.
func (*RestartFleet) ProofRevised() (time.Time, string) {
	return time.Date(2026, 12, 6, 20, 56, 38, 0, time.UTC), "restart-fleet proved that an all-at-once restart was all at once"
}

// ResponderKind: a restart of the fleet is the responders' restart.
func (*RestartFleet) ResponderKind(string) string { return "restart-fleet" }

// allAtOnceSpread bounds how far apart the first starts of an
// all-at-once restart may be for it to count as all at once. Measured:
// 0.4-1.2 s on processes, 0.15-1.9 s on containers with incarnations kept
// ahead; a restart the placement paced by itself spread over 11.6 s (the
// engine's three containers a second) and 18.8 s (a user's image), and
// then recovered like a slow restart: a verdict on the fleet it is not.
const allAtOnceSpread = 4 * time.Second

// RestartSpreader is a fleet that says how far apart its servers' first
// starts after the operator's restart were (n servers started) and
// whether the restart was to be all at once.
type RestartSpreader interface {
	RestartSpread() (spread time.Duration, n int, allAtOnce bool)
}

// provePace records a miss when an all-at-once restart was not: its
// first starts spread over more than allAtOnceSpread.
func provePace(ctx context.Context, t faults.Target) {
	r, ok := t.(RestartSpreader)
	if !ok {
		return
	}
	spread, n, allAtOnce := r.RestartSpread()
	if !allAtOnce || n < 2 {
		return
	}
	if spread > allAtOnceSpread {
		faults.Missed(ctx, t, "the restart was to be all at once, but the placement started the %d servers over %.1f s (at most %s): it paced them itself", n, spread.Seconds(), allAtOnceSpread)
		return
	}
	faults.Landed(ctx, t, "all at once: the %d servers' first starts within %.2f s", n, spread.Seconds())
}
