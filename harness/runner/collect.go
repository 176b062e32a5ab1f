package runner

import (
	"math"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

// collect gathers the variant's result: the servers' series, the
// workload's, the timeline's events, and every metric the plug-ins declare
// as a reducer or the scenario writes as one.
func (v *variant) collect(w lab.Workload, smp *sampler) {
	r := &v.vr.Result
	v.tl.Faults = v.vr.Faults
	if v.tl.End == 0 {
		v.tl.End = v.env.Now()
	}
	smp.record(r, v.p.sys.Series())
	w.Collect(r, v.tl)
	v.mu.Lock()
	r.Events = append(r.Events, v.events...)
	v.mu.Unlock()
	r.Sort()
	r.SetMetric("cluster.health_failures", float64(v.health.failures))
	if len(v.vr.Faults) > 0 {
		r.SetMetric("cluster.healthy_after_fault_s", v.health.afterLast)
	}
	v.reduce(r)
}

// reduce computes the reducer metrics: the declared ones and any the
// scenario writes as an expression.
func (v *variant) reduce(r *lab.Result) {
	known := scenarios.Metrics(v.p.sys, v.p.kind)
	for _, m := range known {
		if m.Reducer != nil {
			setReduced(r, m.Name, *m.Reducer, v.tl)
		}
	}
	for _, name := range v.p.s.MetricNames() {
		if _, ok := known[name]; ok {
			continue
		}
		if red, isExpr, err := lab.ParseReducer(name); isExpr && err == nil {
			setReduced(r, name, red, v.tl)
		}
	}
}

func setReduced(r *lab.Result, name string, red lab.Reducer, tl lab.Timeline) {
	if x, ok := red.Apply(r.Series, tl); ok && !math.IsNaN(x) {
		r.SetMetric(name, x)
	}
}
