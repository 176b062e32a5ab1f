package zkmirror

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Collect turns the clients' samples into series, the computed metrics and
// a summary per client.
func (w *workload) Collect(r *lab.Result, tl lab.Timeline) {
	wlog := w.wlog()
	var ooms, deaths int
	var requests, reconnects, refreshes float64
	lastStale, neverFresh := math.Inf(-1), false
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, s := range w.last { // incarnations stopped at the end of the run
		w.finals[key[0]] = append(w.finals[key[0]], s)
	}
	w.last = map[[2]int]Sample{}
	for i := range w.s.Clients {
		cs := append([]sample(nil), w.samples[i]...)
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].t < cs[b].t })
		var sum lab.Instance
		for _, f := range w.finals[i] {
			requests += float64(f.Completed)
			reconnects += float64(f.Reconnects)
			refreshes += float64(f.Refreshes)
		}
		cLastStale, lastIsStale := w.clientSeries(r, w.group.ID(i), cs, wlog)
		sum = w.group.Summary(i, func(in *lab.Instance) {
			in.Requests, in.Reconnect = 0, 0
			for _, f := range w.finals[i] {
				in.Requests += f.Completed
				in.Reconnect += f.Reconnects
			}
			for _, s := range cs {
				in.PeakRSSMB = max(in.PeakRSSMB, float64(s.s.RSSBytes)/(1<<20))
			}
		})
		r.Clients = append(r.Clients, sum)
		ooms += sum.OOMKills
		deaths += len(sum.Exits)
		// A death is a stale moment, and a client that is dead at the end
		// of the run never became fresh again.
		for _, e := range sum.Exits {
			cLastStale = max(cLastStale, e.T)
			if len(cs) == 0 || e.T >= cs[len(cs)-1].t {
				lastIsStale = true
			}
		}
		if why := staleAtEnd(cs, lastIsStale, tl.End); why != "" {
			neverFresh = true
			if w.env != nil {
				w.env.Event("note", w.group.ID(i), "never fresh again: "+why)
			}
		}
		lastStale = max(lastStale, cLastStale)
	}
	instances.SetExits(r, tl, r.Clients, ooms, deaths)
	if w.s.Program != nil {
		// A program of yours: what the servers saw of it, not what it says.
		requests, reconnects = w.outsideTotals(deaths)
	} else {
		r.SetMetric("clients.refreshes.total", refreshes)
	}
	if !math.IsNaN(requests) {
		r.SetMetric("clients.requests.total", requests)
		r.SetMetric("clients.reconnects.total", reconnects)
	}
	w.group.Record(r)
	r.SetMetric("clients.requests_per_znode_per_reconnect", requestsPerZnode(r, tl, w.tree.Nodes()))
	if end := tl.FaultEnd(); !math.IsNaN(end) && w.anyReports() {
		fresh := math.Inf(1)
		if !neverFresh {
			fresh = max(0, lastStale-end)
		}
		r.SetMetric("clients.fresh_after_fault_s", fresh)
	}
	w.setLimit(r, w.limit)
}

// staleAtEnd says why a client's mirror does not count as fresh at the
// end of the run ("" when it does): no sample, a stale last sample, or no
// sample in the run's last 5 s.
func staleAtEnd(cs []sample, lastIsStale bool, end float64) string {
	switch {
	case len(cs) == 0:
		return "it reported nothing"
	case lastIsStale:
		return fmt.Sprintf("its last sample, at %.1f s, was stale", cs[len(cs)-1].t)
	case cs[len(cs)-1].t < end-5:
		return fmt.Sprintf("its last sample came at %.1f s, %.1f s before the run's end", cs[len(cs)-1].t, end-cs[len(cs)-1].t)
	}
	return ""
}

// outsideTotals are the requests the servers received from the clients
// and the connections they opened beyond each incarnation's first (NaN
// when the servers list no connections).
func (w *workload) outsideTotals(deaths int) (requests, reconnects float64) {
	reqs, conns := w.group.Requests(), w.group.Connections()
	if reqs == nil {
		return math.NaN(), math.NaN()
	}
	opened := 0.0
	for i := range reqs {
		requests += reqs[i]
		opened += conns[i]
	}
	return requests, max(0, opened-float64(len(reqs)+deaths))
}

// clientSeries adds one client's series (counters summed over its
// incarnations) and returns when it was last stale and whether its last
// sample is.
func (w *workload) clientSeries(r *lab.Result, id string, cs []sample, wlog []Write) (lastStale float64, lastIsStale bool) {
	fresh := w.s.FreshWithin.D().Seconds()
	var base, last Sample
	prevInc := 0
	lastStale, lastIsStale = math.Inf(-1), true
	for _, s := range cs {
		if s.inc != prevInc {
			base.Reconnects += last.Reconnects
			base.Completed += last.Completed
			prevInc = s.inc
		}
		last = s.s
		st := math.NaN()
		if s.seq {
			st = Staleness(wlog, s.s.NextSeq, time.UnixMilli(s.s.UnixMS)).Seconds()
			r.Add("client.stale_s", id, "s", s.t, st)
		}
		connected := 0.0
		if s.s.State == "has-session" {
			connected = 1
		}
		// A client of yours gets a series only for what it reports.
		add := func(name string, has bool, unit string, v float64) {
			if has || s.has == nil {
				r.Add(name, id, unit, s.t, v)
			}
		}
		add("client.pending", s.has["pending"] || s.has["inflight"], "requests", float64(s.s.InFlight+s.s.Queued))
		add("client.rss_mb", s.has["rss"], "MiB", float64(s.s.RSSBytes)/(1<<20))
		add("client.reconnects", s.has["reconnects"], "reconnects", float64(base.Reconnects+s.s.Reconnects))
		add("client.connected", s.has["state"], "0/1", connected)
		add("client.completed", s.has["completed"], "requests", float64(base.Completed+s.s.Completed))
		if !s.seq {
			continue
		}
		lastIsStale = st > fresh
		if lastIsStale {
			lastStale = s.t
		}
	}
	return lastStale, lastIsStale
}

// setLimit draws the memory limit as it was enforced across the chart of
// the memory charged to each client's cgroup (what the limit counts; the
// RSS the client reports is not).
func (w *workload) setLimit(r *lab.Result, _ float64) {
	w.group.SetMemoryLimit(r, w.s.MemoryLimitMB)
}

// anyReports says whether some client reported how far its mirror got.
func (w *workload) anyReports() bool {
	for _, ss := range w.samples {
		for _, s := range ss {
			if s.seq {
				return true
			}
		}
	}
	return false
}

// requestsPerZnode is, from the first fault on, the requests the servers
// received from the clients beyond their steady traffic before it (the
// watch re-reads the writer's changes cause), per znode and per
// connection the clients opened (NaN without a fault or without the
// servers' view). What is left is what reconnecting cost: refreshes,
// walks, retries.
func requestsPerZnode(r *lab.Result, tl lab.Timeline, nodes int) float64 {
	from := tl.FaultStart()
	if math.IsNaN(from) || nodes == 0 {
		return math.NaN()
	}
	reqs, conns, any := 0.0, 0.0, false
	for _, s := range r.Named(instances.SeriesRequests) {
		reqs += beyondSteady(s.Points, from)
		any = true
	}
	for _, s := range r.Named(instances.SeriesConnections) {
		grew, _ := grewFrom(s.Points, from)
		conns += grew
	}
	if !any {
		return math.NaN()
	}
	return reqs / float64(nodes) / math.Max(conns, 1)
}

// The steady rate of a client is the lowest it sent at over steadyWindow
// seconds within the steadySpan seconds before the first fault (the
// lowest, so that a walk still finishing in the warm-up is not taken for
// steady traffic).
const steadyWindow, steadySpan = 5.0, 15.0

// grewFrom is what a cumulative count grew by from t on, counted from its
// last sample before t (at 0 when there is none), and that sample's time
// (the first sample's when there is none).
func grewFrom(ps []lab.Point, t float64) (grew, since float64) {
	if len(ps) == 0 {
		return 0, t
	}
	before, since := 0.0, ps[0].T
	for _, p := range ps {
		if p.T >= t {
			break
		}
		before, since = float64(p.V), p.T
	}
	return float64(ps[len(ps)-1].V) - before, since
}

// beyondSteady is what a cumulative count grew by from t on, less what its
// steady rate before t accounts for over the same time (never below 0).
func beyondSteady(ps []lab.Point, t float64) float64 {
	if len(ps) == 0 {
		return 0
	}
	rate := math.Inf(1)
	for i, b := range ps {
		if b.T >= t {
			break
		}
		for _, a := range ps[:i] {
			if d := b.T - a.T; a.T >= t-steadySpan && d >= steadyWindow && d < steadyWindow+2 {
				rate = min(rate, float64(b.V-a.V)/d)
			}
		}
	}
	if math.IsInf(rate, 1) {
		rate = 0 // no window before the fault: nothing is taken as steady
	}
	grew, since := grewFrom(ps, t)
	return math.Max(0, grew-rate*math.Max(0, ps[len(ps)-1].T-since))
}
