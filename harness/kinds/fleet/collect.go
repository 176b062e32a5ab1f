package fleet

import (
	"math"
	"sort"
	"strconv"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Collect turns what the fleet and the load generator recorded into
// series, server summaries and the computed metrics.
func (w *workload) Collect(r *lab.Result, tl lab.Timeline) {
	if w.fleet == nil {
		return
	}
	var snaps []Snapshot
	for _, s := range w.fleet.Servers() {
		snaps = append(snaps, s.Snapshot())
	}
	readyAt := w.servers(r, snaps)
	secs := w.load.Seconds()
	perSecond(r, secs, readyAt)
	w.metrics(r, tl, snaps, secs)
	if w.s.ThreadLimit > 0 {
		r.SetLimit("server.threads", float64(w.s.ThreadLimit), "thread limit "+strconv.Itoa(w.s.ThreadLimit)+" (pids.max)")
	}
}

// servers adds each server's threads and summary; it returns the servers
// routing per second.
func (w *workload) servers(r *lab.Result, snaps []Snapshot) map[int]int {
	readyAt := map[int]int{}
	for _, sn := range snaps {
		for _, p := range sn.Samples {
			v := math.NaN()
			if p.Up {
				v = float64(p.Threads)
			}
			r.Add("server.threads", sn.ID, "threads", p.T, v)
			if p.Ready {
				readyAt[int(p.T)]++
			}
		}
		_, rel := w.env.LogPath(sn.ID)
		in := lab.Instance{ID: sn.ID, Starts: sn.Starts, Log: rel}
		for _, e := range sn.Exits {
			if e.ByHarness == "end of run" {
				continue
			}
			in.Exits = append(in.Exits, lab.Exit{T: e.T, Code: e.Code, Signal: e.Signal, How: e.How})
		}
		r.Clients = append(r.Clients, in)
	}
	return readyAt
}

// perSecond adds the success over the fleet and per server, each second.
func perSecond(r *lab.Result, secs []Second, readyAt map[int]int) {
	for _, s := range secs {
		t := float64(s.Sec) + 0.5
		if s.Attempts > 0 {
			r.Add("fleet.routing_success", "fleet", "share", t, float64(s.OK)/float64(s.Attempts))
		}
		if s.OK > 0 {
			r.Add("fleet.routing_p99_ms", "fleet", "ms", t, s.P99MS)
		}
		r.Add("fleet.servers_routing", "fleet", "servers", t, float64(readyAt[s.Sec]))
		ids := make([]string, 0, len(s.Servers))
		for id := range s.Servers {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			b := s.Servers[id]
			r.Add("server.routing_success", id, "share", t, float64(b.OK)/float64(b.Attempts))
		}
	}
}

// metrics computes the fleet's figures over the trigger and the restart.
func (w *workload) metrics(r *lab.Result, tl lab.Timeline, snaps []Snapshot, secs []Second) {
	trig, restart := tl.Fault("add-capacity"), tl.Fault("restart-fleet")
	end := 0.0
	if n := len(secs); n > 0 {
		end = float64(secs[n-1].Sec) // the last, partial second is left out
	}
	maxThreads, beforeMax, threadExits, pidsRefused, removals := 0.0, 0.0, 0.0, 0.0, 0.0
	for _, sn := range snaps {
		for _, p := range sn.Samples {
			maxThreads = math.Max(maxThreads, float64(p.Threads))
			if trig == nil || p.T < trig.Start {
				beforeMax = math.Max(beforeMax, float64(p.Threads))
			}
		}
		for _, e := range sn.Exits {
			if e.ThreadLimit {
				threadExits++
			}
			pidsRefused += float64(e.PidsLimitHit)
		}
		removals += float64(sn.Removals)
	}
	r.SetMetric("fleet.threads.before_trigger_max", beforeMax)
	if w.s.ThreadLimit > 0 {
		r.SetMetric("fleet.threads.max_ratio_to_limit", maxThreads/float64(w.s.ThreadLimit))
	}
	r.SetMetric("fleet.thread_limit_exits", threadExits)
	r.SetMetric("fleet.pids_limit_refusals", pidsRefused)
	r.SetMetric("fleet.health_removals", removals)
	r.SetMetric("fleet.routing_success.end", ratio(secs, end-10, end, ""))
	if trig != nil {
		r.SetMetric("fleet.routing_success.before_trigger", ratio(secs, trig.Start-10, trig.Start, ""))
		r.SetMetric("fleet.routing_success.during_trigger", ratio(secs, trig.Start, trig.End, ""))
		lo, hi := w.perServerAfter(secs, snaps, trig)
		if !math.IsInf(lo, 1) {
			r.SetMetric("fleet.routing_success.min_server_after_trigger", lo)
			r.SetMetric("fleet.routing_success.max_server_after_trigger", hi)
		}
	}
	if restart != nil {
		// The operator's restart is when the servers are stopped and
		// started: on containers that comes after the next incarnations
		// are created ahead (35 s for 32 servers), which the operator's
		// all-at-once restart does not have to wait for.
		from := restart.Start
		if w.fleet != nil {
			if at := w.fleet.RestartStarted(); !at.IsZero() {
				from = math.Max(from, w.env.Clock(at))
			}
		}
		r.SetMetric("fleet.recovery_after_restart_s", recovery(secs, from, end))
		if spread, n := startSpread(snaps, from); n > 1 {
			r.SetMetric("fleet.restart.start_spread_s", spread)
		}
	}
}

// perServerAfter is the lowest and highest share any original server
// routed once every server could have learned of the addition.
func (w *workload) perServerAfter(secs []Second, snaps []Snapshot, trig *lab.FaultWindow) (lo, hi float64) {
	from := trig.Start + w.s.LearnSpread.D().Seconds()
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, sn := range snaps {
		if sn.Added {
			continue
		}
		x := ratio(secs, from, trig.End, sn.ID)
		if math.IsNaN(x) {
			continue
		}
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// ratio is the share of requests routed in [from, to), over the fleet or
// one server.
func ratio(secs []Second, from, to float64, server string) float64 {
	att, ok := 0, 0
	for _, s := range secs {
		t := float64(s.Sec)
		if t < from || t >= to {
			continue
		}
		if server == "" {
			att += s.Attempts
			ok += s.OK
		} else if b := s.Servers[server]; b != nil {
			att += b.Attempts
			ok += b.OK
		}
	}
	if att == 0 {
		return math.NaN()
	}
	return float64(ok) / float64(att)
}

// recovery is the time from the restart's start to the first second from
// which every second to the end routes >= 99%, if that lasted at least 5 s.
func recovery(secs []Second, start, end float64) float64 {
	rec := math.Inf(1)
	for i := len(secs) - 1; i >= 0; i-- {
		s := secs[i]
		t := float64(s.Sec)
		if t >= end {
			continue
		}
		if t < start || s.Attempts == 0 || float64(s.OK)/float64(s.Attempts) < 0.99 {
			break
		}
		rec = t - start
	}
	if end-(start+rec) < 5 {
		rec = math.Inf(1)
	}
	return math.Max(rec, 0)
}

// startSpread is the seconds between the first and the last server's
// first start after the operator's restart began, and how many started.
func startSpread(snaps []Snapshot, from float64) (float64, int) {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, sn := range snaps {
		for _, t := range sn.StartTimes {
			if t >= from {
				lo, hi, n = math.Min(lo, t), math.Max(hi, t), n+1
				break
			}
		}
	}
	return hi - lo, n
}
