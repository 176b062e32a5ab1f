package sim

import (
	"math"
	"testing"
	"time"
)

func firstBelow(r KinesisResult, x float64) float64 {
	for i, v := range r.Routing {
		if v < x {
			return r.T[i]
		}
	}
	return math.Inf(1)
}

func TestKinesisIncidentScale(t *testing.T) {
	start := time.Now()
	m := IncidentKinesis()
	r := m.Run()
	t.Logf("slow restart: %d events in %s; over limit %d, removals %d, max threads %d, recovered %.0f min after the restart began; half the fleet down %.0f min after the addition",
		r.Events, time.Since(start).Round(time.Millisecond), r.OverLimit, r.Removals, r.MaxThreads, r.Recovered/60, firstBelow(r, 0.5)/60)
	if r.OverLimit < m.Servers+m.Added {
		t.Errorf("%d of %d servers went over the limit", r.OverLimit, m.Servers)
	}
	if math.IsInf(r.Recovered, 1) {
		t.Fatal("the slow restart did not recover")
	}
	// 3,600 servers at 300 an hour: 12 h, the incident's 12 h 16 min.
	if got := r.Recovered / 60; got < 600 || got > 800 {
		t.Errorf("recovered after %.0f min, want about 736", got)
	}

	fast := m
	fast.RestartRate = 0
	f := fast.Run()
	t.Logf("fast restart: removals %d, recovered %.0f min", f.Removals, f.Recovered/60)
	if !(f.Recovered > 2*r.Recovered) {
		t.Errorf("fast restart recovered after %.0f min, slow after %.0f", f.Recovered/60, r.Recovered/60)
	}

	mit := m
	mit.PerPeer, mit.PoolThreads, mit.CellSize, mit.FromStore, mit.RestartRate = false, 8, 100, true, 0
	g := mit.Run()
	t.Logf("mitigated: over limit %d, recovered %.0f s", g.OverLimit, g.Recovered)
	if g.OverLimit != 0 || g.Recovered > 600 {
		t.Errorf("mitigated: %d over the limit, recovered after %.0f s", g.OverLimit, g.Recovered)
	}
}
