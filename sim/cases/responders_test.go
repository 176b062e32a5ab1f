package cases

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/sim"
)

// The responders' actions come from the case records' timelines: IL-0587's
// at 12:42 UTC, 3 h 33 min after the leader's high CPU (09:09 UTC), with
// the write-up's window to 13:02; IL-0384's restart at 10:07 PST, 7 h 23 min
// after the addition began (02:44 PST).
func TestResponderActionsFromRecords(t *testing.T) {
	zk := responderActions("il-0587")
	require.Len(t, zk, 2)
	for _, a := range zk {
		require.Equal(t, 213*60.0, a.After, a.Kind)
		require.Equal(t, 20*60.0, a.Window, a.Kind)
		require.NotEmpty(t, a.Source)
	}
	require.Equal(t, []string{"scale-proxies", "leader-election"}, []string{zk[0].Kind, zk[1].Kind})
	m := zkResponders(sim.IncidentZK())
	require.Len(t, m.Actions, 2)
	require.Equal(t, m.FaultAt+213*60, m.Actions[0].At)

	k := kinesisIncidentModel()
	require.Equal(t, (7*60+23)*60.0, k.RestartAt-k.AddAt)
	require.Equal(t, sim.IncidentKinesis().Horizon-sim.IncidentKinesis().RestartAt, k.Horizon-k.RestartAt)
}

// IL-0587 at the incident's scale with the responders' actions replayed at
// their times, against the write-up's ~20-minute full outage, within
// zkRespondersAgree (2x). The finding this pins: the model does NOT
// recover after them. Its loop is the servers' GC thrash under the
// fleet's queued refreshes (every TreeCache reconnect adds a whole tree),
// which neither more memory, more proxies nor a new leader removes; the
// forced election disconnects every proxy and restarts the flood. So the
// outage after the actions lasts to the horizon, outside the band. A model
// change that makes the actions work flips the check below: then set
// recovers to true and keep the factor.
//
// Why no change of the actions' mechanics can make them work here: the
// state after them is a heavier load than the one the untreated fleet
// collapsed from (3,000 proxies instead of 2,000, every one refreshing at
// once after the forced election, against 2,000 after the 15 s stall), and
// the loop sustains itself once the trigger is gone. So the servers go on
// stalling in GC and electing leaders of their own after the actions,
// which the test checks; only a trigger that lasted until the forced
// election (the leader's "heavy CPU load" from 09:09) on servers whose
// loop does not sustain itself could end with the actions, and neither is
// published (sim/README.md).
func TestZKRespondersAgainstWriteUp(t *testing.T) {
	const recovers = false
	m := zkResponders(sim.IncidentZK())
	first := m.Actions[0].At
	m.Horizon = first + 45*60 // past the band's 40 min, and cheaper than the full horizon
	start := time.Now()
	r := m.Run()
	t.Logf("with the actions at %.0f min after the trigger: %d events in %s; outage after them %.1f min, recovered after them %.0f s, whole outage %.0f min, elections %d, OOM kills %d",
		(first-m.FaultAt)/60, r.Events, time.Since(start).Round(time.Millisecond), r.OutageAfterActions/60, r.RecoveredAfterActions, r.Outage/60, r.Elections, r.OOMKills)
	require.Equal(t, first, r.ActedAt)
	// The actions were taken: the fleet grew by half, and a leader was
	// elected after them.
	last := len(r.Alive) - 1
	require.Greater(t, r.Alive[last], 1.4*float64(m.Proxies))
	lo, hi := zkAfterActionsBand()
	agrees := r.OutageAfterActions/60 >= lo && r.OutageAfterActions/60 <= hi
	require.Equal(t, recovers, agrees, "outage after the actions %.1f min against the band %g-%g min", r.OutageAfterActions/60, lo, hi)
	require.True(t, math.IsInf(r.RecoveredAfterActions, 1))
	// The loop goes on after the actions: GC stalls and elections the
	// servers hold by themselves besides the forced one.
	t.Logf("after the actions: %d GC stalls, %d elections", r.GCStallsAfterActions, r.ElectionsAfterActions)
	require.Positive(t, r.GCStallsAfterActions)
	require.Greater(t, r.ElectionsAfterActions, 1)
}

// The same model with the servers' request throttle of ZooKeeper 3.8
// (sim.ZKStorm.Throttled): a server holds only the reads it accepted, at
// most globalOutstandingLimit plus about one a connection, never the
// proxies' own queues. Then the flood never puts a server into GC thrash,
// and the 15 s stall costs one refresh of every mirror (two reads a znode,
// 40,000 pending a proxy, under its memory limit): no OOM kill, no proxy
// without a route, every mirror fresh within an hour. With the responders'
// actions there is no outage for them to end either. The write-up's
// collapse thus needs what this model does not hold: a server whose queue
// is not bounded (the untreated model's assumption) or a trigger that
// keeps coming back.
func TestZKThrottledServersAgainstWriteUp(t *testing.T) {
	u := sim.IncidentZK()
	u.Throttled = true
	u.Horizon = u.FaultAt + u.Duration + 3600
	start := time.Now()
	r := u.Run()
	t.Logf("throttled, untreated: %d events in %s; full outage %.0f min, degraded %.0f min, OOM kills %d, GC stalls %d, elections %d, every mirror fresh %.0f s after the stall, most reads pending in a proxy %.0f",
		r.Events, time.Since(start).Round(time.Millisecond), r.Outage/60, r.Degraded/60, r.OOMKills, r.GCStalls, r.Elections, r.FreshAfter, r.PeakPendingFromFault)
	require.Zero(t, r.GCStalls)
	require.Zero(t, r.OOMKills)
	require.Zero(t, r.Outage)
	require.Less(t, r.FreshAfter, 3600.0)

	m := zkResponders(sim.IncidentZK())
	m.Throttled = true
	m.Horizon = m.Actions[0].At + 3600
	start = time.Now()
	q := m.Run()
	t.Logf("throttled, with the actions: %d events in %s; full outage %.0f min (after the actions %.0f min), 90%% of the proxies routing %.0f min after the actions, OOM kills %d, elections %d",
		q.Events, time.Since(start).Round(time.Millisecond), q.Outage/60, q.OutageAfterActions/60, q.RecoveredAfterActions/60, q.OOMKills, q.Elections)
	require.Zero(t, q.OOMKills)
	require.Zero(t, q.OutageAfterActions)
	require.Equal(t, r.Elections+1, q.Elections)
	lo, _ := zkAfterActionsBand()
	require.Less(t, q.OutageAfterActions/60, lo, "no outage to end: outside the band from below")
}

// The same throttled servers, with the leader's heavy CPU load taken as
// lasting until the responders' election (sim.ZKStorm.Relapse: the leader
// stalls again every zkRelapse seconds, whichever server it is). The fleet
// then collapses through the proxies alone (stacked TreeCache refreshes
// run them out of memory; no GC thrash), and the actions end the full
// outage: 9.7 min after them (seed 1), inside the band of 0.5-40 min and
// 4x from its top. What it pins besides: the election ends the trigger and
// the servers hold no election of their own after it; the collapse starts
// at the first relapses, not 3 h 33 min after the trigger (the model has
// no slow decline); 90% of the proxies route again 47-48 min after the
// actions, where the write-up had availability back within 21.
func TestZKRelapsingRespondersAgainstWriteUp(t *testing.T) {
	m := zkResponders(zkRelapsing(sim.IncidentZK()))
	first := m.Actions[0].At
	m.Horizon = first + 60*60
	start := time.Now()
	r := m.Run()
	t.Logf("relapsing every %.0f s, throttled, with the actions: %d events in %s; full outage from the trigger %.0f min (starting %.1f min after it), after the actions %.1f min, 90%% routing %.1f min after them; trigger stalls %d, elections %d (after the actions %d), GC stalls %d, OOM kills %d",
		zkRelapse, r.Events, time.Since(start).Round(time.Millisecond), r.Outage/60, (r.OutageStart-r.FaultAt)/60, r.OutageAfterActions/60, r.RecoveredAfterActions/60,
		r.Stalls, r.Elections, r.ElectionsAfterActions, r.GCStalls, r.OOMKills)
	lo, hi := zkAfterActionsBand()
	got := r.OutageAfterActions / 60
	require.GreaterOrEqual(t, got, 2*lo, "an outage for the actions to end")
	require.LessOrEqual(t, got, hi/2, "the actions end it, 2x inside the band's top")
	require.Zero(t, r.GCStalls, "throttled servers do not thrash")
	require.Equal(t, 1, r.ElectionsAfterActions, "the forced election is the last")
	require.Equal(t, int((first-m.FaultAt)/zkRelapse)+1, r.Stalls, "the trigger returns until the election")
	require.Less(t, r.OutageStart-r.FaultAt, 3*zkRelapse, "the collapse comes with the first relapses")
	require.Less(t, r.RecoveredAfterActions, 60*60.0, "90% routing again within the hour")
}

// How the comparison after the actions moves with the relapsing trigger's
// period, which the write-up does not give (CHAOSLAB_FULL=1, about 30 s):
// from 2 to 15 minutes the full outage after the actions stays 8.8-10.3
// min (seeds 1 and 2), inside the band; from 20 minutes the fleet is up
// again between relapses when the responders act, so there is no outage
// for them to end (sim/README.md).
func TestZKRelapsePeriods(t *testing.T) {
	if os.Getenv("CHAOSLAB_FULL") == "" {
		t.Skip("CHAOSLAB_FULL=1 runs the period sweep")
	}
	lo, hi := zkAfterActionsBand()
	for _, period := range []float64{120, 300, 600, 900} {
		for seed := uint64(1); seed <= 2; seed++ {
			m := sim.IncidentZK()
			m.Seed = seed
			m.Throttled, m.Relapse = true, period
			m = zkResponders(m)
			m.Horizon = m.Actions[0].At + 60*60
			r := m.Run()
			got := r.OutageAfterActions / 60
			t.Logf("period %4.0f s, seed %d: full outage starts %5.1f min after the trigger; after the actions %4.1f min, 90%% routing %4.1f min after them; %d OOM kills",
				period, seed, (r.OutageStart-r.FaultAt)/60, got, r.RecoveredAfterActions/60, r.OOMKills)
			require.True(t, got >= lo && got <= hi, "period %.0f s, seed %d: %.1f min outside %g-%g", period, seed, got, lo, hi)
		}
	}
}
