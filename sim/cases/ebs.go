package cases

import (
	"fmt"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/sim"
	"github.com/chaoslab/chaoslab/verdict"
)

// ebsResponders: the EBS model replays the operators' actions, but the
// write-up gives them no clock times, so their times are the model's.
const ebsResponders = "the operators' actions in the write-up's order (create-volume disabled, the cluster cut off from the control plane, futile contacts stopped, capacity added, access reopened, volumes restored) at times the model chooses: the write-up publishes no clock times, so none come from the case record's timeline"

func init() {
	register(&Case{
		ID:       "aws-ebs-2011",
		Aliases:  []string{"ebs"},
		Scenario: ebsScenario,
		Model:    "sim/ebs.go",
		Title:    "EBS re-mirroring storm in one zone takes the regional control plane down with it",
		Scales:   []string{ScaleIncident, ScaleHarness},
		Responders: func(scale string) string {
			if scale == ScaleHarness {
				return ""
			}
			return ebsResponders
		},
		Variants: func(o Options) ([]Variant, error) {
			if o.Scale == ScaleHarness {
				return ebsHarnessVariants(o)
			}
			inc, mit := sim.IncidentEBS(), sim.MitigatedEBS()
			inc.Seed, mit.Seed = o.Seed, o.Seed
			mk := func(name, desc string, m sim.EBS) Variant {
				return Variant{Name: name, Description: desc, Parameters: ebsParams(m), Run: func() sim.Result { return m.Run().Summary() }, Responders: ebsResponders,
					Faults: []reports.FaultWindow{{Fault: "network-cut", Target: "zone", Member: fmt.Sprintf("%.0f%% of the nodes", 100*m.Intensity), Start: 0, End: m.CutDuration,
						Detail: "the traffic shift that isolated nodes from their peers"}}}
			}
			return []Variant{
				mk("vulnerable", "The zone as it was: 5% spare, re-mirroring searches retried every 10 s without back-off, the node crash race, create-volume calls holding regional threads for a long timeout; the operators act in the write-up's order.", inc),
				mk("mitigated", "The action items: 15% spare, exponential back-off with jitter, the race fixed, short timeouts, each zone capped at its share of the regional pool; the same operators.", mit),
			}, nil
		},
		Hypotheses: func(scale string) []scenarios.Hypothesis {
			if s := atHarness(scale, ebsScenario); s != nil {
				return s.Spec().Hypotheses
			}
			return []scenarios.Hypothesis{
				{ID: "few-volumes-stuck", Description: "At most 3% of the zone's volumes are ever stuck.", Metric: "ebs.stuck_share.peak", Op: "<=", Threshold: 0.03},
				{ID: "other-zones-unaffected", Description: "No more than 1% of the other zones' control-plane calls fail in any sample.", Metric: "region.api_error_share.peak", Op: "<=", Threshold: 0.01},
				{ID: "no-node-crashes", Description: "No storage node crashes.", Metric: "zone.nodes_failed", Op: "==", Threshold: 0},
			}
		},
		Expect: map[string]verdict.Verdict{"vulnerable": verdict.Violated, "mitigated": verdict.Held},
		Comparisons: func(scale string) []scenarios.Comparison {
			if s := atHarness(scale, ebsScenario); s != nil {
				return s.Comparisons
			}
			return []scenarios.Comparison{{
				ID: "stuck-4x", Description: "The zone as it was gets at least 4 times the peak share of stuck volumes of the mitigated zone.",
				Metric: "ebs.stuck_share.peak", Numerator: "vulnerable", Denominator: "mitigated", Op: ">=", Threshold: 4,
			}}
		},
		Incident: ebsIncident,
		Sweeps:   ebsSweeps,
	})
}

func ebsParams(m sim.EBS) []reports.Parameter {
	used := 2 * float64(m.Volumes) / float64(m.Nodes*m.Slots)
	back := fmt.Sprintf("every %.0f s (±%.0f%%), no back-off", m.Retry.Base, 100*m.Retry.Jitter)
	if m.Retry.Factor > 1 {
		back = fmt.Sprintf("%.0f s ×%.0f up to %.0f s, ±%.0f%% jitter", m.Retry.Base, m.Retry.Factor, m.Retry.Max, 100*m.Retry.Jitter)
	}
	cap := "none"
	if m.ZoneCap > 0 {
		cap = fmt.Sprintf("%d threads per zone", m.ZoneCap)
	}
	return []reports.Parameter{
		{Name: "Zone", Value: fmt.Sprintf("%d nodes × %d replica slots, %d volumes (%.0f%% spare)", m.Nodes, m.Slots, m.Volumes, 100*(1-used))},
		{Name: "Trigger", Value: fmt.Sprintf("%.0f%% of the nodes cut off for %.0f min", 100*m.Intensity, m.CutDuration/60)},
		{Name: "Re-mirroring search", Value: back},
		{Name: "Crash race", Value: fmt.Sprintf("%.2g per request closed without success", m.RaceProb)},
		{Name: "Regional control plane", Value: fmt.Sprintf("%d threads for %d zones; per-zone cap: %s; create-volume timeout %.0f s", m.Threads, m.Zones, cap, m.CreateTimeout)},
		{Name: "Operators", Value: fmt.Sprintf("create-volume off at %s, control plane cut at %s, contained at %s, %d nodes added from %s, reopened from %s, restores from %s",
			clock(m.CreateOffAt), clock(m.CutCPAt), clock(m.ContainAt), m.AddNodes, clock(m.AddCapacityAt), clock(m.ReopenAt), clock(m.RestoreAt))},
		{Name: "Horizon", Value: clock(m.Horizon)},
		{Name: "Seed", Value: fmt.Sprint(m.Seed)},
	}
}

func ebsIncident(res map[string]sim.Result) []reports.IncidentRow {
	if rows, ok := againstHarness(res, ebsCompared, sim.EBSHarnessAgree); ok {
		return rows
	}
	r, ok := res["vulnerable"]
	if !ok {
		return nil
	}
	vols := float64(sim.IncidentEBS().Volumes)
	stuck, n := publishedRow("aws-ebs-2011", "stuck_volumes_at_containment", "ebs.stuck_share.at_containment", "vulnerable", "of the volumes")
	stuck.Note = "band ±3 points: \"about\", and the write-up counts the share at one moment the model has to place (containment at 11 h)"
	race, m := publishedRow("aws-ebs-2011", "additional_stuck_from_race_condition", "ebs.stuck_by_race", "vulnerable", "of the volumes")
	race.Note = "band ×0.5 to ×1.6: the crashes are few (tens of nodes), so the share varies between seeds"
	cp, _ := publishedRow("aws-ebs-2011", "control_plane_sets_per_region", "region.api_error_share.peak", "vulnerable", "of the calls")
	cp.Incident += " Create-volume calls waiting out long timeouts filled its threads, and API calls from the other zones failed."
	cp.Published = "other zones' calls failed"
	cp.Note = "compared: a sizeable share (≥ 20%) of the other zones' calls failing at the worst sample"
	return []reports.IncidentRow{
		band(stuck, r.Metrics["ebs.stuck_share.at_containment"], (n.Value-3)/100, (n.Value+3)/100),
		band(race, r.Metrics["ebs.stuck_by_race"]/vols, 0.5*m.Value/100, 1.6*m.Value/100),
		band(cp, r.Metrics["region.api_error_share.peak"], 0.2, 1),
		band(reports.IncidentRow{
			Incident:  "Recovery took days: capacity added, the control plane reopened node by node, volumes restored from snapshots.",
			Published: "days (no figure)", Metric: "ebs.recovered_s", Variant: "vulnerable", Unit: "h",
			Note: "compared: 2 to 5 days; the operators' times are the model's choices, spread over days 2–4",
		}, r.Metrics["ebs.recovered_s"]/3600, 48, 120),
	}
}

func ebsSweeps(o Options) []Sweep {
	base := sim.IncidentEBS()
	base.Seed = o.Seed
	base.Horizon = 36 * 3600
	return []Sweep{{
		Title:   "EBS 2011: nodes cut off against the cut's length, no operator action (36 h horizon)",
		Variant: "vulnerable",
		XName:   "nodes cut off (share of the zone)", YName: "cut length (s)",
		X:         []float64{0.01, 0.02, 0.03, 0.05, 0.08, 0.11, 0.15, 0.2},
		Y:         []float64{60, 300, 600, 1200, 2400},
		IncidentX: 0.11, IncidentY: 1200,
		Note: "Recovered: the stuck share is back under 0.5% within an hour of the network coming back. Recovered slowly: only as stale replicas are freed, hours later. Stayed down: nodes crashed by the race add stuck volumes faster than space comes back; only the operators' actions (capacity, containment, restores) end it. The incident's point (11% for 20 min) stays down.",
		Run: func(x, y float64) sim.Result {
			return base.WithTrigger(x, y).Run().Summary()
		},
	}}
}

// ebsScenario is the harness scenario the EBS model is calibrated by.
const ebsScenario = "aws-ebs-2011-remirror-storm"

// EBSReferenceReport is the harness run the EBS model is checked against
// by default at the harness's scale (local processes, seed 1; only the
// series the calibration reads and the charts need kept).
const EBSReferenceReport = "sim/testdata/aws-ebs-2011-report.json"

// ebsCompared are the figures compared with the harness run: the
// scenario's two hypotheses.
var ebsCompared = []string{"ebs.stuck_share.end", "ebs.create_success.other_zones"}

// ebsHarnessVariants calibrates each variant from the harness report
// (sim.EBSFromReport) and puts the harness's figures next to the model's.
func ebsHarnessVariants(o Options) ([]Variant, error) {
	r, err := calibration(o.Calibrate, EBSReferenceReport, ebsScenario)
	if err != nil {
		return nil, err
	}
	var out []Variant
	for _, v := range r.Variants {
		m, err := sim.EBSFromReport(r, v.Name)
		if err != nil {
			return nil, err
		}
		m.Seed = o.Seed
		hv := v
		out = append(out, Variant{
			Name: v.Name, Description: v.Description + " Calibrated from harness run " + r.RunID + ".",
			Parameters: ebsHarnessParams(m),
			Responders: "none: the harness scenario has no operator, so the comparison is of the untreated system",
			Faults: []reports.FaultWindow{{Fault: "degrade-links", Target: "zone-a", Member: "every node of the zone", Start: 0, End: m.CutDuration,
				Detail: "the zone's mirror links degraded: every mirror misses its ack"}},
			Run: func() sim.Result { return withHarness(m.Run().Summary(), hv, ebsCompared) },
		})
	}
	return out, nil
}

func ebsHarnessParams(m sim.EBS) []reports.Parameter {
	pool := fmt.Sprintf("one pool of %d workers for %d zones", m.Threads, m.Zones)
	if m.ZoneCap > 0 {
		pool = fmt.Sprintf("%d workers per zone, %d zones", m.ZoneCap, m.Zones)
	}
	return []reports.Parameter{
		{Name: "Zone", Value: fmt.Sprintf("%d nodes × %d replica slots, %d volumes mirrored on the next node (%d spare slots)", m.Nodes, m.Slots, m.Volumes, m.Nodes*m.Slots-2*m.Volumes)},
		{Name: "Trigger", Value: fmt.Sprintf("every node cut off from its peers for %.0f s; a volume notices within %.2f s on average", m.CutDuration, m.NoticeMean)},
		{Name: "Re-mirroring search", Value: fmt.Sprintf("back-off %.3g s ×%g up to %.3g s, ±%.0f%% jitter; a call without space waits %.1f s for it", m.Retry.Base, m.Retry.Factor, m.Retry.Max, 100*m.Retry.Jitter, m.SpaceWait)},
		{Name: "Control plane", Value: fmt.Sprintf("%s, first come first served, a call waits %.1f s at most; %.3f s a call (measured); create-volume %.0f/s per zone, success within %.0f s", pool, m.QueueWait, m.ServiceTime, m.CreateRate, m.SLO)},
		{Name: "Horizon", Value: fmt.Sprintf("%.0f s from the fault", m.Horizon)},
		{Name: "Seed", Value: fmt.Sprint(m.Seed)},
	}
}
