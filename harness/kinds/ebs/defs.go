package ebs

import "github.com/chaoslab/chaoslab/harness/lab"

func (kind) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: "ebs.stuck_share", Title: "Share of each zone's volumes stuck (no primary with a live mirror)", Unit: "share"},
		{Name: "ebs.searches_per_s", Title: "Re-mirroring searches for space per second, per zone", Unit: "searches/s"},
		{Name: "ebs.free_slots", Title: "Free replica slots per zone (etcd)", Unit: "slots"},
		{Name: "ebs.pool_busy", Title: "Control-plane workers busy, share of each pool", Unit: "share"},
		{Name: "ebs.pool_waiting", Title: "Control-plane calls waiting for a worker, per pool", Unit: "calls"},
		{Name: "ebs.cp_timeouts_per_s", Title: "Control-plane calls timed out per second, per zone", Unit: "calls/s"},
		{Name: "ebs.create_success", Title: "Create-volume calls answered OK within create_slo, share per second, per zone", Unit: "share"},
		{Name: "ebs.create_p99_ms", Title: "Create-volume latency, 99th percentile per second, per zone (ms)", Unit: "ms"},
	}
}

func (kind) Metrics() []lab.MetricDef {
	m := func(name, unit, doc string) lab.MetricDef { return lab.MetricDef{Name: name, Unit: unit, Doc: doc} }
	return []lab.MetricDef{
		m("ebs.stuck_share.end", "share", "share of the degraded zone's volumes stuck, mean of the last 5 s of the run"),
		m("ebs.stuck_share.max", "share", "highest share of the degraded zone's volumes stuck from the fault on"),
		m("ebs.stuck_share.after_faults_max", "share", "highest share of the degraded zone's volumes stuck from 10 s after the links were restored"),
		m("ebs.volumes_stuck.end", "volumes", "the degraded zone's volumes stuck at the last sample"),
		m("ebs.searches_per_s.max", "searches/s", "most re-mirroring searches in one second in the degraded zone"),
		m("ebs.searches.total", "searches", "re-mirroring searches of the degraded zone's nodes over the run"),
		m("ebs.free_slots.min", "slots", "fewest free replica slots in the degraded zone from the fault on"),
		m("ebs.pool_busy.max", "share", "highest share of a control-plane pool's workers busy from the fault on"),
		m("ebs.cp_timeouts", "calls", "control-plane calls that timed out over the run, every zone"),
		m("ebs.create_success.before_fault", "share", "share of create-volume calls from every zone answered OK within create_slo before the fault"),
		m("ebs.create_success.other_zones", "share", "share of create-volume calls from the zones not degraded answered OK within create_slo, from the fault to the end of the run"),
		m("ebs.create_success.degraded_zone", "share", "share of create-volume calls from the degraded zone answered OK within create_slo, from the fault to the end of the run"),
		m("ebs.create_p99_ms.other_zones", "ms", "99th percentile of create-volume latency in the zones not degraded, from the fault to the end of the run"),
	}
}

// Images: the nodes and the control plane are chaoslab's own agents.
// A user's callers run from their own image.
func (s *Settings) Images() []lab.ImageNeed {
	need := []lab.ImageNeed{{Name: lab.AgentImage}}
	if s.Program != nil && s.Program.Image != "" {
		need = append(need, lab.ImageNeed{Name: "user-caller", Ref: s.Program.Image, Defaults: []string{s.Program.Image}})
	}
	return need
}
