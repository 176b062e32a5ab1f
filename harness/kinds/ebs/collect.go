package ebs

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Collect adds the series, the create-volume figures per second and
// zone, and the metrics judged against the degraded zone (the first
// fault's target).
func (w *workload) Collect(r *lab.Result, tl lab.Timeline) {
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	for k, pts := range w.rec.points {
		s := r.SeriesFor(k.name, k.source, w.rec.units[k.name])
		s.Points = append(s.Points, pts...)
	}
	if w.s.Program == nil {
		w.collectCalls(r)
	} else {
		w.collectCreates(r)
	}
	degraded := ZoneNames[0]
	if len(tl.Faults) > 0 {
		degraded, _, _ = strings.Cut(tl.Faults[0].Member, ",")
	}
	fs, fe := tl.FaultStart(), tl.FaultEnd()
	if math.IsNaN(fs) {
		fs, fe = tl.End, tl.End
	}
	stuck := w.rec.points[seriesKey{"ebs.stuck_share", degraded}]
	end := tl.End
	r.SetMetric("ebs.stuck_share.end", mean(stuck, end-5, end))
	r.SetMetric("ebs.stuck_share.max", reduce(stuck, fs, end, math.Max))
	r.SetMetric("ebs.stuck_share.after_faults_max", reduce(stuck, fe+10, end, math.Max))
	if n := len(stuck); n > 0 {
		r.SetMetric("ebs.volumes_stuck.end", float64(w.rec.stuck[degraded]))
	}
	searches := w.rec.points[seriesKey{"ebs.searches_per_s", degraded}]
	r.SetMetric("ebs.searches_per_s.max", reduce(searches, math.Inf(-1), end, math.Max))
	r.SetMetric("ebs.searches.total", float64(w.rec.searches[degraded]))
	r.SetMetric("ebs.free_slots.min", reduce(w.rec.points[seriesKey{"ebs.free_slots", degraded}], fs, end, math.Min))
	busy := math.NaN()
	for k, pts := range w.rec.points {
		if k.name == "ebs.pool_busy" {
			busy = nanMax(busy, reduce(pts, fs, end, math.Max))
		}
	}
	r.SetMetric("ebs.pool_busy.max", busy)
	r.SetMetric("ebs.cp_timeouts", float64(w.rec.cpTotal))
	r.SetLimit("ebs.stuck_share", 1, "every volume of the zone")
	if w.s.Program != nil {
		cc := w.rec.creates
		r.SetMetric("ebs.create_success.before_fault", endedOK(cc, func(string) bool { return true }, math.Inf(-1), fs))
		r.SetMetric("ebs.create_success.other_zones", endedOK(cc, func(z string) bool { return z != degraded }, fs, end))
		r.SetMetric("ebs.create_success.degraded_zone", endedOK(cc, func(z string) bool { return z == degraded }, fs, end))
		var last map[string][2]int64
		if n := len(cc); n > 0 {
			last = cc[n-1].Zones
		}
		for i, z := range w.zones { // exits before the first fault fail the steady state
			r.Clients = append(r.Clients, w.group.Summary(i, func(in *lab.Instance) { in.Requests = last[z.name][0] }))
		}
		return
	}
	other := func(c call) bool { return c.Zone != degraded && c.T >= fs && c.T <= end }
	r.SetMetric("ebs.create_success.before_fault", success(w.rec.calls, func(c call) bool { return c.T < fs }))
	r.SetMetric("ebs.create_success.other_zones", success(w.rec.calls, other))
	r.SetMetric("ebs.create_success.degraded_zone", success(w.rec.calls, func(c call) bool { return c.Zone == degraded && c.T >= fs && c.T <= end }))
	r.SetMetric("ebs.create_p99_ms.other_zones", p99(w.rec.calls, other))
}

// collectCreates: a user's callers' create-volume calls as the control
// plane counted them, each in the second it ended.
func (w *workload) collectCreates(r *lab.Result) {
	cc := w.rec.creates
	for k := 1; k < len(cc); k++ {
		for z, c := range cc[k].Zones {
			if n := c[0] - cc[k-1].Zones[z][0]; n > 0 {
				r.Add("ebs.create_success", z, "share", cc[k].T, float64(c[1]-cc[k-1].Zones[z][1])/float64(n))
			}
		}
	}
}

// endedOK is the share of the create-volume calls of the zones kept that
// ended between the samples at from and to (the last sample at or before
// each) answered OK within the SLO, as the control plane counted them.
func endedOK(cc []createCount, keep func(string) bool, from, to float64) float64 {
	at := func(t float64) map[string][2]int64 {
		var m map[string][2]int64
		for _, c := range cc {
			if c.T <= t {
				m = c.Zones
			}
		}
		return m
	}
	a, b := at(from), at(to)
	var n, ok int64
	for z, c := range b {
		if keep(z) {
			n += c[0] - a[z][0]
			ok += c[1] - a[z][1]
		}
	}
	if n <= 0 {
		return math.NaN()
	}
	return float64(ok) / float64(n)
}

// collectCalls turns the create-volume calls into per-second series,
// each call in the second it was sent.
func (w *workload) collectCalls(r *lab.Result) {
	type key struct {
		zone string
		sec  int
	}
	type bucket struct {
		ok, n int
		ms    []float64
	}
	per := map[key]*bucket{}
	var keys []key
	for _, c := range w.rec.calls {
		k := key{c.Zone, int(math.Floor(c.T))}
		b := per[k]
		if b == nil {
			b = &bucket{}
			per[k] = b
			keys = append(keys, k)
		}
		b.n++
		b.ms = append(b.ms, c.Ms)
		if c.OK {
			b.ok++
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].sec < keys[j].sec })
	for _, k := range keys {
		b := per[k]
		r.Add("ebs.create_success", k.zone, "share", float64(k.sec), float64(b.ok)/float64(b.n))
		r.Add("ebs.create_p99_ms", k.zone, "ms", float64(k.sec), quantile(b.ms, 0.99))
	}
}

func mean(pts []lab.Point, from, to float64) float64 {
	sum, n := 0.0, 0
	for _, p := range pts {
		if p.T >= from && p.T <= to && !math.IsNaN(float64(p.V)) {
			sum += float64(p.V)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func reduce(pts []lab.Point, from, to float64, f func(a, b float64) float64) float64 {
	v := math.NaN()
	for _, p := range pts {
		if p.T >= from && p.T <= to && !math.IsNaN(float64(p.V)) {
			if math.IsNaN(v) {
				v = float64(p.V)
			} else {
				v = f(v, float64(p.V))
			}
		}
	}
	return v
}

func nanMax(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return math.Max(a, b)
}

func success(calls []call, keep func(call) bool) float64 {
	ok, n := 0, 0
	for _, c := range calls {
		if keep(c) {
			n++
			if c.OK {
				ok++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(ok) / float64(n)
}

func p99(calls []call, keep func(call) bool) float64 {
	var ms []float64
	for _, c := range calls {
		if keep(c) {
			ms = append(ms, c.Ms)
		}
	}
	return quantile(ms, 0.99)
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[min(int(math.Ceil(q*float64(len(s))))-1, len(s)-1)]
}
