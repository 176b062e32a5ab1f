package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/kinds/fleet"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/record"
)

// restarting is a fleet whose restart's first starts spread as told.
type restarting struct {
	fleet.CapacityTarget
	lab.Target
	spread    time.Duration
	allAtOnce bool
	starts    int
}

func (r *restarting) Name() string                    { return "fleet" }
func (r *restarting) Restart(context.Context) error   { r.starts++; return nil }
func (r *restarting) WaitReady(context.Context) error { return nil }
func (r *restarting) Procs() map[string]fleet.ServerProc {
	return map[string]fleet.ServerProc{"fe-00": {Starts: r.starts, Running: true}}
}
func (r *restarting) RestartSpread() (time.Duration, int, bool) {
	return r.spread, 32, r.allAtOnce
}

// An all-at-once restart that the placement spread over seconds did not
// land as the scenario asked: the variant is inconclusive, not judged.
func TestRestartAllAtOnceProvesItsPace(t *testing.T) {
	for _, tc := range []struct {
		spread    time.Duration
		allAtOnce bool
		want      []string
	}{
		{800 * time.Millisecond, true, []string{record.Landed, record.Landed}},
		{12 * time.Second, true, []string{record.Landed, record.Missed}},
		{40 * time.Second, false, []string{record.Landed}},
	} {
		ctx, proofs := faults.WithProofs(context.Background(), nil)
		tgt := &restarting{spread: tc.spread, allAtOnce: tc.allAtOnce}
		require.NoError(t, (&fleet.RestartFleet{}).Inject(ctx, tgt, time.Millisecond))
		var got []string
		for _, p := range proofs.List() {
			got = append(got, p.Landed)
		}
		require.Equal(t, tc.want, got, "spread %s, all at once %v: %+v", tc.spread, tc.allAtOnce, proofs.List())
	}
}
