package sim

import (
	"testing"
	"time"
)

// BenchmarkIncidentScale times one run of each model's variants at the
// incident's scale, on one core (each run is single-threaded):
//
//	go test -run XXX -bench IncidentScale -benchtime 1x ./sim/
//
// It reports the wall time of the run (s/run) and the engine's rate on it.
func BenchmarkIncidentScale(b *testing.B) {
	paced := IncidentZK()
	paced.Strategy, paced.Window = Paced, 8
	slow := IncidentKinesis()
	fast := slow
	fast.RestartRate = 0
	mit := slow
	mit.PerPeer, mit.PoolThreads, mit.CellSize, mit.FromStore, mit.RestartRate = false, 8, 100, true, 0
	runs := []struct {
		name string
		run  func() uint64
	}{
		{"il-0587/full-refresh", func() uint64 { return IncidentZK().Run().Events }},
		{"il-0587/paced", func() uint64 { return paced.Run().Events }},
		{"il-0384/restart-all-at-once", func() uint64 { return fast.Run().Events }},
		{"il-0384/restart-300-an-hour", func() uint64 { return slow.Run().Events }},
		{"il-0384/mitigated", func() uint64 { return mit.Run().Events }},
		{"ebs-2011/incident", func() uint64 { return IncidentEBS().Run().Events }},
		{"ebs-2011/mitigated", func() uint64 { return MitigatedEBS().Run().Events }},
		{"il-0206/vulnerable", func() uint64 { return IncidentGitLabDB().Run().Events }},
		{"il-0206/later-discovery", func() uint64 { return IncidentGitLabDB().WithLaterDiscovery().Run().Events }},
		{"il-0206/limit-2x", func() uint64 { return IncidentGitLabDB().WithLimit(2).Run().Events }},
	}
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			var events uint64
			start := time.Now()
			n := 0
			for b.Loop() {
				events += r.run()
				n++
			}
			wall := time.Since(start).Seconds()
			b.ReportMetric(wall/float64(n), "s/run")
			b.ReportMetric(float64(events)/wall, "events/s")
		})
	}
}
