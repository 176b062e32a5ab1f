package dblb

import (
	"fmt"
	"math"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Collect adds the app's per-second series, the servers' samples, the
// pods' lookups and the metrics over the fault's window.
func (w *workload) Collect(r *lab.Result, tl lab.Timeline) {
	w.collectApp(r)
	w.collectDB(r)
	w.collectPods(r)
	w.collectAgents(r)
	fs, fe := tl.FaultStart(), tl.FaultEnd()
	if math.IsNaN(fs) {
		return
	}
	during, before := w.rec.window(fs, fe), w.rec.window(fs-10, fs)
	r.SetMetric(MetricPrimaryShare, during.primaryShare())
	r.SetMetric("app.primary_read_share.before_faults", before.primaryShare())
	r.SetMetric(MetricReadP99, quantile(during.readMS, 0.99))
	r.SetMetric("app.read_p50_ms.during_faults", quantile(during.readMS, 0.5))
	r.SetMetric("app.read_p99_ms.before_faults", quantile(before.readMS, 0.99))
	r.SetMetric(MetricErrorRate, during.errorRate())
	w.collectDBMetrics(r, fs, fe)
	if w.s.Program != nil {
		w.programShares(r, fs, fe)
	}
}

// programShares: a user's pods are judged on the reads they were asked
// for that no replica got. Those sent to the primary are counted at its
// proxies, but a pod whose pool waits on a saturated primary holds reads
// back that never reach it, and where they would have gone is not seen
// from outside: asked and not sent to a replica counts as gone to the
// primary (the figure the scenario's hypothesis bounds).
func (w *workload) programShares(r *lab.Result, fs, fe float64) {
	perS := w.askedPerS()
	// The recorder's window holds the whole seconds that begin in it.
	asked := func(from, to float64) float64 { return perS * (math.Ceil(to) - math.Ceil(from)) }
	notReplica := func(from, to float64) float64 {
		if asked(from, to) <= 0 {
			return math.NaN()
		}
		return math.Max(0, 1-float64(w.rec.window(from, to).replicaReads)/asked(from, to))
	}
	r.SetMetric(MetricPrimaryShare, notReplica(fs, fe))
	r.SetMetric("app.primary_read_share.before_faults", notReplica(fs-10, fs))
	if during := w.rec.window(fs, fe); asked(fs, fe) > 0 {
		r.SetMetric(MetricReadsSent, float64(during.primaryReads+during.replicaReads)/asked(fs, fe))
	}
}

// askedPerS is the reads a second a user's pods are asked for, together.
func (w *workload) askedPerS() float64 {
	return w.s.ReadRate * float64(w.s.Processes) * float64(len(w.fwds))
}

func (w *workload) collectApp(r *lab.Result) {
	ts, ss := w.rec.seconds()
	for i, t := range ts {
		s, at := ss[i], float64(t)+0.5
		switch n := s.primaryReads + s.replicaReads; {
		case w.s.Program != nil && i > 0: // as judged: asked and not sent to a replica (from the pods' first second on)
			r.Add(SeriesPrimaryShare, "app", "share", at, math.Max(0, 1-float64(s.replicaReads)/w.askedPerS()))
		case n > 0:
			r.Add(SeriesPrimaryShare, "app", "share", at, float64(s.primaryReads)/float64(n))
		}
		if len(s.readMS) > 0 {
			r.Add(SeriesReadP50, "app", "ms", at, quantile(s.readMS, 0.5))
			r.Add(SeriesReadP99, "app", "ms", at, quantile(s.readMS, 0.99))
		}
		r.Add(SeriesReads, "primary", "reads/s", at, float64(s.primaryReads))
		r.Add(SeriesReads, "replicas", "reads/s", at, float64(s.replicaReads))
		if s.requests > 0 {
			r.Add(SeriesErrorRate, "app", "share", at, float64(s.failed)/float64(s.requests))
		}
	}
}

func (w *workload) collectDB(r *lab.Result) {
	w.mu.Lock()
	samples := append([]dbSample(nil), w.samples...)
	w.mu.Unlock()
	names := w.serverNames()
	var served dbSample // the last sample that counted the servers' statements
	for i, d := range samples {
		if w.s.Program == nil { // a user's pods do not say what they list
			r.Add(SeriesNoReplicas, "app", "processes", d.t, float64(d.noReplica))
		}
		if d.ok[0] {
			p := d.servers[0]
			r.Add(SeriesActive, "primary", "connections", d.t, float64(p.Active))
			r.Add(SeriesSaturation, "primary", "share", d.t, float64(p.Connections)/float64(w.s.MaxConnections))
		}
		if d.arrived != nil {
			w.addPodShares(r, served, d)
			served = d
		}
		if i == 0 {
			continue
		}
		prev := samples[i-1]
		dt := d.t - prev.t
		for j, name := range names {
			if j >= len(d.ok) || !d.ok[j] || !prev.ok[j] || dt <= 0 {
				continue
			}
			r.Add(SeriesCPU, name, "cores", d.t, (d.servers[j].CPUSeconds-prev.servers[j].CPUSeconds)/dt)
			r.Add(SeriesXacts, name, "xacts/s", d.t, float64(d.servers[j].XactCommit-prev.servers[j].XactCommit)/dt)
		}
	}
	r.SetLimit(SeriesSaturation, 1, fmt.Sprintf("max_connections %d", w.s.MaxConnections))
	r.SetLimit(SeriesCPU, w.s.PrimaryCPU, fmt.Sprintf("the primary's CPU share, %g cores", w.s.PrimaryCPU))
	if w.s.Program == nil {
		r.SetLimit(SeriesNoReplicas, float64(len(w.procs)), fmt.Sprintf("all %d processes", len(w.procs)))
	}
}

func (w *workload) serverNames() []string {
	var out []string
	if w.pg == nil {
		return nil
	}
	for _, s := range w.pg.Servers() {
		out = append(out, s.Name())
	}
	return out
}

// collectPods adds each pod's lookups, their totals and the pods as the
// report's instances.
func (w *workload) collectPods(r *lab.Result) {
	w.mu.Lock()
	samples := append([]dbSample(nil), w.samples...)
	w.mu.Unlock()
	maxNo := 0.0
	for _, d := range samples {
		maxNo = math.Max(maxNo, float64(d.noReplica))
		for i, c := range d.lookups {
			for k, what := range []string{"answered", "empty", "failed"} {
				r.Add(SeriesLookups, fmt.Sprintf("pod-%d %s", i+1, what), "lookups", d.t, float64(c[k]))
			}
		}
	}
	if w.s.Program != nil {
		w.collectPrograms(r, samples)
		return
	}
	r.SetMetric("app.processes_without_replicas.max", maxNo)
	var tot [3]int64
	pods := map[int]*lab.Instance{}
	var order []int
	for _, p := range w.procs {
		tot[0] += p.answered.Load()
		tot[1] += p.empty.Load()
		tot[2] += p.failed.Load()
		in := pods[p.pod]
		if in == nil {
			in = &lab.Instance{ID: fmt.Sprintf("pod-%d", p.pod+1), Starts: 1}
			pods[p.pod] = in
			order = append(order, p.pod)
		}
		in.Requests += p.answered.Load() + p.empty.Load() + p.failed.Load()
	}
	for _, i := range order {
		r.Clients = append(r.Clients, *pods[i])
	}
	r.SetMetric("pods.lookups_answered", float64(tot[0]))
	r.SetMetric("pods.lookups_empty", float64(tot[1]))
	r.SetMetric("pods.lookups_failed", float64(tot[2]))
}

// collectDBMetrics: mean CPU of the primary and of the replicas over
// [from, to).
func (w *workload) collectDBMetrics(r *lab.Result, from, to float64) {
	w.mu.Lock()
	samples := append([]dbSample(nil), w.samples...)
	w.mu.Unlock()
	var first, last *dbSample
	for i := range samples {
		d := &samples[i]
		if d.t < from || d.t >= to || !allOK(d.ok) {
			continue
		}
		if first == nil {
			first = d
		}
		last = d
	}
	if first == nil || last == first {
		return
	}
	dt := last.t - first.t
	r.SetMetric("primary.cpu_cores.during_faults", (last.servers[0].CPUSeconds-first.servers[0].CPUSeconds)/dt)
	rep := 0.0
	for j := 1; j < len(last.servers); j++ {
		rep += last.servers[j].CPUSeconds - first.servers[j].CPUSeconds
	}
	r.SetMetric("replicas.cpu_cores.during_faults", rep/dt)
}

func allOK(ok []bool) bool {
	for _, o := range ok {
		if !o {
			return false
		}
	}
	return len(ok) > 0
}

// addPodShares adds, for a user's pods, each pod's share of the reads it
// was asked for between two samples that no replica got (as judged).
func (w *workload) addPodShares(r *lab.Result, prev, cur dbSample) {
	dt := cur.t - prev.t
	if prev.arrived == nil || cur.arrived == nil || dt <= 0 {
		return
	}
	asked := w.s.ReadRate * float64(w.s.Processes) * dt
	for i := range cur.arrived[0] {
		var replica, before int64
		for j := range cur.arrived {
			before += prev.arrived[j][i].reads
			if j > 0 {
				replica += cur.arrived[j][i].reads - prev.arrived[j][i].reads
			}
		}
		if before == 0 {
			continue // the pod has not started reading yet
		}
		r.Add(SeriesPrimaryShare, fmt.Sprintf("pod-%02d", i+1), "share", cur.t, math.Max(0, 1-float64(replica)/asked))
	}
}

// collectPrograms: a user's pods as the report's instances (starts,
// exits, statements the servers started), and their lookups at the
// forwarders.
func (w *workload) collectPrograms(r *lab.Result, samples []dbSample) {
	var last dbSample
	for _, d := range samples {
		if d.arrived != nil {
			last = d
		}
	}
	var tot [3]int64
	if n := len(samples); n > 0 {
		for _, c := range samples[n-1].lookups {
			for k := range tot {
				tot[k] += c[k]
			}
		}
	}
	for i := range w.group.Len() { // exits before the first fault fail the steady state
		in := w.group.Summary(i, nil)
		for j := range last.arrived {
			in.Requests += last.arrived[j][i].reads + last.arrived[j][i].writes
		}
		r.Clients = append(r.Clients, in)
	}
	r.SetMetric("pods.lookups_answered", float64(tot[0]))
	r.SetMetric("pods.lookups_empty", float64(tot[1]))
	r.SetMetric("pods.lookups_failed", float64(tot[2]))
}
