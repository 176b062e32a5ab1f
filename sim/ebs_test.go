package sim

import (
	"math"
	"testing"
	"time"
)

// The write-up's published numbers (linked from
// seeds/aws-ebs-2011.yaml): about 13% of the zone's volumes stuck in the
// storm, 13% stuck when the containment change landed, of which nodes
// crashed by the race condition had stuck an additional 5%; the regional
// control plane failed other zones' calls while create-volume calls held
// its threads, the other APIs recovered once create-volume was disabled in
// the zone, and a later brownout from re-mirroring negotiations ended when
// the cluster was cut off from the control plane; recovery needed new
// capacity, a gradual reconnection and snapshot restores (days). 0.07% of
// the volumes could not be restored (not modelled: every lost volume here
// is restored from its snapshot).

func logEBS(t *testing.T, name string, r EBSResult, wall time.Duration) {
	t.Helper()
	sum := r.Summary()
	t.Logf("%s: %d events in %s; peak stuck %.1f%% at %.1f h, %.1f%% at containment, %.1f%% of volumes stuck by %d crashed nodes; API errors in other zones: peak %.0f%%, over 5%% from %.2f h to %.2f h (%.2f h in all); stuck under %.1f%% from %.1f h: %s",
		name, r.Events, wall.Round(time.Millisecond), 100*r.PeakStuck, r.PeakStuckAt/3600, 100*r.StuckAtContain,
		100*float64(r.StuckByRace)/45000, r.NodesCrashed, 100*r.PeakAPIErrors, r.APIDegradedFrom/3600, r.APIDegradedTo/3600,
		r.APIDegraded/3600, 100*r.Bound, r.Recovered/3600, sum.Outcome)
}

// meanAPI is the mean share of other zones' calls failing over [from, to) h.
func meanAPI(r EBSResult, from, to float64) float64 {
	sum, n := 0.0, 0
	for i, at := range r.T {
		if at >= from*3600 && at < to*3600 {
			sum += r.APIErrors[i]
			n++
		}
	}
	return sum / float64(max(n, 1))
}

func TestEBSIncidentScale(t *testing.T) {
	start := time.Now()
	m := IncidentEBS()
	r := m.Run()
	wall := time.Since(start)
	logEBS(t, "incident", r, wall)
	a, b, c, d := meanAPI(r, 0.25, 2), meanAPI(r, 2.25, 4), meanAPI(r, 4, 7.5), meanAPI(r, 7.75, 48)
	t.Logf("incident: other zones' calls failing (mean): %.0f%% until create-volume is disabled at 2 h; %.1f%% from 2.25 h to 4 h; %.1f%% in the negotiation brownout 4-7.5 h; %.1f%% once the cluster is cut off",
		100*a, 100*b, 100*c, 100*d)
	t.Logf("write-up: about 13%% stuck in the storm and 13%% at containment, the race condition adding 5%%; other zones failing while create-volume held the pool, recovering when it was disabled, a later brownout; recovery over days")
	if wall > 20*time.Second {
		t.Errorf("full-scale run took %s", wall)
	}
	// Bands: the 13% is "about" (cerca de) and the write-up also says 13%
	// at containment with 5% added by crashes, so the peak may sit anywhere
	// from about 13% to 13% + 5%: 10% to 18%.
	if r.PeakStuck < 0.10 || r.PeakStuck > 0.18 {
		t.Errorf("peak stuck share %.3f, want 0.10-0.18 (write-up: about 0.13)", r.PeakStuck)
	}
	if math.Abs(r.StuckAtContain-0.13) > 0.03 {
		t.Errorf("stuck at containment %.3f, want 0.13 ± 0.03", r.StuckAtContain)
	}
	// The race condition's extra share: 5%, band 2.5% to 8%.
	if x := float64(r.StuckByRace) / float64(m.Volumes); x < 0.025 || x > 0.08 {
		t.Errorf("stuck by crashed nodes %.3f, want 0.025-0.08 (write-up: 0.05)", x)
	}
	// The storm is there before the race adds to it: most of the stuck
	// volumes at 1 h come from the cut itself.
	if r.Stuck[60] < 0.05 {
		t.Errorf("stuck at 1 h %.3f: no storm", r.Stuck[60])
	}
	// The control plane: other zones fail while create-volume holds the
	// pool, recover once it is disabled, brown out again, and are fine once
	// the cluster is cut off.
	if a < 0.2 || b > 0.05 || c < b || d > 0.01 {
		t.Errorf("control-plane periods %.3f %.3f %.3f %.3f, want high, recovered, brownout, none", a, b, c, d)
	}
	// The cluster stops degrading at containment: no crash after it.
	for i, at := range r.T {
		if at > m.ContainAt+m.Sample && r.NodesFailed[i] != float64(r.NodesCrashed) {
			t.Fatalf("node crashed at %.1f h, after containment", at/3600)
		}
	}
	// Recovery takes days (capacity on day 2, reconnection from 48 h).
	sum := r.Summary()
	if sum.Outcome != RecoveredSlowly || r.Recovered < 48*3600 || r.Recovered > m.Horizon {
		t.Errorf("recovery %s at %.1f h, want slow, on day 3-5", sum.Outcome, r.Recovered/3600)
	}

	start = time.Now()
	g := MitigatedEBS().Run()
	logEBS(t, "mitigated", g, time.Since(start))
	// Spare capacity absorbs the re-mirroring: what is stuck is only the
	// volumes with both replicas cut off, until the network is back.
	if g.PeakStuck > 0.03 || g.PeakStuck > r.PeakStuck/4 {
		t.Errorf("mitigated peak stuck %.3f (incident %.3f)", g.PeakStuck, r.PeakStuck)
	}
	if g.PeakAPIErrors != 0 || g.NodesCrashed != 0 {
		t.Errorf("mitigated: API error peak %.3f, %d crashes", g.PeakAPIErrors, g.NodesCrashed)
	}
	if s := g.Summary(); s.Outcome != Recovered {
		t.Errorf("mitigated: %s (%s)", s.Outcome, s.Why)
	}
	if len(sum.Series) != 5 || sum.Metrics["ebs.stuck_share.peak"] != r.PeakStuck || sum.Events != r.Events {
		t.Errorf("summary %v", sum.Metrics)
	}
}

func TestEBSDeterministic(t *testing.T) {
	m := IncidentEBS()
	m.Horizon = 12 * 3600 // past containment; enough to compare
	a, b := m.Run(), m.Run()
	if a.Events != b.Events || a.PeakStuck != b.PeakStuck || a.NodesCrashed != b.NodesCrashed || len(a.T) != len(b.T) {
		t.Fatalf("same seed, different runs: %d/%d events", a.Events, b.Events)
	}
	for i := range a.T {
		if a.Stuck[i] != b.Stuck[i] || a.APIErrors[i] != b.APIErrors[i] || a.Free[i] != b.Free[i] {
			t.Fatalf("same seed, sample %d differs", i)
		}
	}
	for seed := uint64(2); seed <= 3; seed++ {
		m.Seed = seed
		c := m.Run()
		t.Logf("seed %d: peak stuck %.1f%%, at containment %.1f%%, %d crashed, API error peak %.0f%%, %d events",
			seed, 100*c.PeakStuck, 100*c.StuckAtContain, c.NodesCrashed, 100*c.PeakAPIErrors, c.Events)
		if c.Events == a.Events && c.PeakStuck == a.PeakStuck {
			t.Errorf("seed %d gave the same run as seed 1", seed)
		}
		if c.PeakStuck < 0.10 || c.PeakStuck > 0.18 || c.PeakAPIErrors < 0.2 {
			t.Errorf("seed %d: peak stuck %.3f, API error peak %.3f", seed, c.PeakStuck, c.PeakAPIErrors)
		}
	}
}

// Without the operators, a small cut recovers at once, a mid-sized one
// recovers by itself but slowly (stale replicas freed one by one), and the
// incident's own cut or a larger one stays down: the race condition keeps
// adding stuck volumes faster than space comes back.
func TestEBSMetastable(t *testing.T) {
	cases := []struct {
		f, d    float64
		horizon float64
		want    Outcome
	}{
		{0.03, 1200, 12 * 3600, Recovered},
		{0.11, 300, 12 * 3600, RecoveredSlowly},
		{0.08, 1200, 24 * 3600, RecoveredSlowly},
		{0.11, 1200, 24 * 3600, StayedDown}, // the incident's point
		{0.20, 1200, 24 * 3600, StayedDown},
	}
	for _, c := range cases {
		m := IncidentEBS().WithTrigger(c.f, c.d)
		m.Horizon = c.horizon
		start := time.Now()
		r := m.Run()
		s := r.Summary()
		t.Logf("cut %.0f%% of nodes for %.0f s: peak stuck %.1f%%, %d crashed, %d events in %s: %s (%s)",
			100*c.f, c.d, 100*r.PeakStuck, r.NodesCrashed, r.Events, time.Since(start).Round(time.Millisecond), s.Outcome, s.Why)
		if s.Outcome != c.want {
			t.Errorf("cut %.2f for %.0f s: %s, want %s", c.f, c.d, s.Outcome, c.want)
		}
	}
	// The mitigated zone absorbs the incident's cut by itself.
	m := MitigatedEBS().WithTrigger(0.11, 1200)
	m.Horizon = 12 * 3600
	if s := m.Run().Summary(); s.Outcome != Recovered {
		t.Errorf("mitigated, incident's cut, no operators: %s (%s)", s.Outcome, s.Why)
	}
}
