package sim

import (
	"fmt"
	"slices"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs"
	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

// EBSHarnessAgree is the factor within which the EBS model calibrated from
// a harness run agrees with it, figure by figure (the stuck share at the
// end and the other zones' create-volume success): the harness's figures
// are one seeded run of 24 volumes, where one volume is 4 points of the
// stuck share, and the model's searchers find their slots in an order
// the harness's do not share.
const EBSHarnessAgree = 1.5

// EBSFromReport calibrates the EBS model from a harness report of
// aws-ebs-2011-remirror-storm for one of its variants, at the harness's
// scale: the degraded zone (zone-a) as the model's zone 0 and the other
// zones as its callers. Times are s from the start of the degrade-links
// fault.
//
// From the variant's effective workload: the zone's nodes, its volumes
// (nodes × volumes_per_node, two replicas each), each node's slots (its
// primaries, the mirrors it holds and spare_slots), the search back-off
// (search_backoff doubling to search_backoff_max, jitter), the zones,
// pool_workers shared or split per zone, request_timeout (how long a call
// waits for a worker, and for space once it has one: create-volume and
// the search alike), create_rate from every zone and create_slo. No node
// crashes (the harness has no race) and a replaced mirror's slot is never
// given back. From the fault window: the whole zone cut off from its
// peers for the fault's length; the horizon is the end of the
// observation. A volume notices its lost mirror at its next write that
// misses its ack: write_every/2 + mirror_timeout on average. The replicas
// are placed as the harness places them (Ring).
//
// Measured in the run: ServiceTime, the median over the warm-up's seconds
// of the create-volume p99 latency of every zone (a call then has a
// worker at once and space, so this is its whole time, the HTTP round
// trip included: an upper bound of the worker's time).
func EBSFromReport(r *reports.Report, variant string) (EBS, error) {
	fail := func(format string, args ...any) (EBS, error) {
		return EBS{}, fmt.Errorf("calibrate aws-ebs-2011: "+format, args...)
	}
	if r == nil || r.Scenario == nil {
		return fail("the report has no scenario")
	}
	v := r.Variant(variant)
	if v == nil {
		return fail("no variant %q in the report", variant)
	}
	st := ebs.NewSettings()
	kind, err := v.DecodeWorkload(st)
	if err != nil {
		return fail("%v", err)
	}
	if kind != ebs.KindName {
		return fail("variant %s: workload kind %q, want %s", variant, kind, ebs.KindName)
	}
	cut := ksFault(v, "degrade-links")
	if cut == nil {
		return fail("variant %s has no degrade-links fault window", variant)
	}
	if cut.Target != ebs.ZoneNames[0] {
		return fail("variant %s degrades %s; the model's degraded zone is %s", variant, cut.Target, ebs.ZoneNames[0])
	}
	svc, err := ebsServiceTime(v, cut.Start)
	if err != nil {
		return fail("variant %s: %v", variant, err)
	}
	timeout := st.RequestTimeout.D().Seconds()
	back := Backoff{Base: st.SearchBackoff.D().Seconds(), Factor: 1, Max: st.SearchBackoffMax.D().Seconds()}
	if back.Max > back.Base {
		back.Factor = 2
	}
	if st.SearchJitter {
		// The harness draws each wait between half and all of it: the
		// model's ±jitter around three quarters of it.
		back.Base, back.Max, back.Jitter = 0.75*back.Base, 0.75*back.Max, 1.0/3
	}
	length := cut.End - cut.Start
	plan, err := scenarios.PlanOf(r)
	if err != nil {
		return fail("%v", err)
	}
	observe := plan.ObserveS
	m := EBS{
		Nodes: st.NodesPerZone, Slots: 2*st.VolumesPerNode + st.SpareSlots, Volumes: st.NodesPerZone * st.VolumesPerNode, Ring: true,
		Intensity: 1, CutDuration: length,
		NoticeMean: st.WriteEvery.D().Seconds()/2 + st.MirrorTimeout.D().Seconds(),
		Retry:      back,
		Zones:      st.Zones, Threads: st.PoolWorkers, ServiceTime: svc,
		OtherRate: st.CreateRate, CreateRate: st.CreateRate,
		CreateTimeout: timeout, QueueWait: timeout, SpaceWait: timeout, SLO: st.CreateSLO.D().Seconds(),
		NegotiatePer: svc,
		StuckBound:   0.05, Quick: observe,
		Horizon: length + observe, Sample: 1, Seed: 1,
	}
	// Create-volume needs a free slot on two nodes, or waits for space.
	m.CreateNodes = 2
	if st.Pool == ebscontrol.PerZone {
		m.ZoneCap = max(st.PoolWorkers/st.Zones, 1)
		m.Threads = m.ZoneCap * st.Zones
	}
	return m, nil
}

// ebsServiceTime is the median create-volume p99 over the seconds before
// the fault, every zone.
func ebsServiceTime(v *reports.VariantResult, fault float64) (float64, error) {
	var xs []float64
	for _, s := range v.Series {
		if s.Name != "ebs.create_p99_ms" {
			continue
		}
		for _, p := range s.Points {
			if x := float64(p.V); p.T < fault && x > 0 {
				xs = append(xs, x/1000)
			}
		}
	}
	if len(xs) == 0 {
		return 0, fmt.Errorf("no ebs.create_p99_ms before the fault: the service time cannot be measured")
	}
	slices.Sort(xs)
	return xs[len(xs)/2], nil
}
