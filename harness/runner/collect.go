package runner

import (
	"math"
	"sort"
	"time"

	"github.com/chaoslab/chaoslab/harness/zkmirror"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// collect turns the raw samples into the report's series, events and metrics.
func (v *variantRun) collect(clients []*client, srv *serverSampler, wlog []zkmirror.Write) {
	vr := v.vr
	fresh := vr.Workload.FreshWithin.D()
	if fresh <= 0 {
		fresh = 2 * time.Second
	}
	faultEnd, faultStart := math.NaN(), math.NaN()
	for _, f := range vr.Faults {
		if math.IsNaN(faultStart) || f.Start < faultStart {
			faultStart = f.Start
		}
		if math.IsNaN(faultEnd) || f.End > faultEnd {
			faultEnd = f.End
		}
	}
	warm := v.warmEnd
	if warm == 0 {
		warm = v.s.Timeline.Warmup.D().Seconds()
	}
	m := map[string]float64{}

	// Servers.
	srv.mu.Lock()
	samples := append([]serverSample(nil), srv.samples...)
	srv.mu.Unlock()
	sort.Slice(samples, func(i, j int) bool { return samples[i].t < samples[j].t })
	var peakOut, peakLat float64
	peakFromFault := math.NaN()
	lastState := map[string]string{}
	buckets := map[int]map[string]float64{}
	for _, s := range samples {
		if !s.ok {
			// No answer (a paused server): a gap in its lines, not a figure.
			for _, name := range []string{"server.outstanding_requests", "server.avg_latency_ms", "server.connections"} {
				if sr := findSeries(vr, name, s.member); sr != nil {
					sr.Points = append(sr.Points, pt(s.t, math.NaN()))
				}
			}
			continue
		}
		vr.SeriesFor("server.outstanding_requests", s.member, "requests").Points = append(vr.SeriesFor("server.outstanding_requests", s.member, "requests").Points, pt(s.t, s.outstanding))
		vr.SeriesFor("server.avg_latency_ms", s.member, "ms").Points = append(vr.SeriesFor("server.avg_latency_ms", s.member, "ms").Points, pt(s.t, s.avgLatency))
		vr.SeriesFor("server.connections", s.member, "connections").Points = append(vr.SeriesFor("server.connections", s.member, "connections").Points, pt(s.t, s.conns))
		peakOut = max(peakOut, s.outstanding)
		if !math.IsNaN(faultStart) && s.t >= faultStart {
			if math.IsNaN(peakFromFault) {
				peakFromFault = 0
			}
			peakFromFault = max(peakFromFault, s.outstanding)
		}
		peakLat = max(peakLat, s.avgLatency)
		if lastState[s.member] != s.state {
			if lastState[s.member] != "" || s.state != "" {
				v.events = append(v.events, reports.Event{T: s.t, Kind: "state", Source: s.member, Detail: "now " + s.state})
			}
			lastState[s.member] = s.state
		}
		if !math.IsNaN(faultEnd) && s.t >= faultEnd {
			b := int(s.t)
			if buckets[b] == nil {
				buckets[b] = map[string]float64{}
			}
			buckets[b][s.member] = s.conns
		}
	}
	m["servers.outstanding_requests.max"] = peakOut
	m["servers.avg_latency_ms.max"] = peakLat
	if !math.IsNaN(peakFromFault) {
		m["servers.outstanding_requests.max_from_fault"] = peakFromFault
	}
	if len(buckets) > 0 {
		minConns := math.Inf(1)
		for _, b := range buckets {
			// Only slots in which every member answered count.
			if len(b) < len(lastState) {
				continue
			}
			sum := 0.0
			for _, c := range b {
				sum += c
			}
			minConns = min(minConns, sum)
		}
		if !math.IsInf(minConns, 1) {
			m["servers.connections.min_after_fault"] = minConns
		}
	}

	// Clients.
	var ooms, deaths int
	var rssMax, pendMax, staleMax float64
	pendFromFault := math.NaN()
	var requests, reconnects, refreshes float64
	lastStale := math.Inf(-1)
	neverFresh := false
	runEnd := v.s.RunLength().Seconds()
	if !v.runEnd.IsZero() {
		runEnd = v.clock(v.runEnd)
	}
	for _, c := range clients {
		c.mu.Lock()
		cs := append([]clientSample(nil), c.samples...)
		finals := append([]zkmirror.Sample(nil), c.finals...)
		vr.Clients = append(vr.Clients, c.sum)
		v.events = append(v.events, c.events...)
		ooms += c.sum.OOMKills
		deaths += len(c.sum.Exits)
		c.mu.Unlock()
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].t < cs[j].t })

		// Cumulative counters across incarnations.
		var base zkmirror.Sample
		prevInc := 0
		var last zkmirror.Sample
		cLastStale := math.Inf(-1)
		lastIsStale := true
		for _, s := range cs {
			if s.inc != prevInc {
				base.Reconnects += last.Reconnects
				base.Completed += last.Completed
				base.Refreshes += last.Refreshes
				prevInc = s.inc
			}
			last = s.s
			st := zkmirror.Staleness(wlog, s.s.NextSeq, time.UnixMilli(s.s.UnixMS)).Seconds()
			pend := float64(s.s.InFlight + s.s.Queued)
			rss := float64(s.s.RSSBytes) / (1 << 20)
			vr.SeriesFor("client.pending", c.id, "requests").Points = append(vr.SeriesFor("client.pending", c.id, "requests").Points, pt(s.t, pend))
			vr.SeriesFor("client.rss_mb", c.id, "MiB").Points = append(vr.SeriesFor("client.rss_mb", c.id, "MiB").Points, pt(s.t, rss))
			vr.SeriesFor("client.stale_s", c.id, "s").Points = append(vr.SeriesFor("client.stale_s", c.id, "s").Points, pt(s.t, st))
			vr.SeriesFor("client.reconnects", c.id, "reconnects").Points = append(vr.SeriesFor("client.reconnects", c.id, "reconnects").Points, pt(s.t, float64(base.Reconnects+s.s.Reconnects)))
			connected := 0.0
			if s.s.State == "has-session" {
				connected = 1
			}
			vr.SeriesFor("client.connected", c.id, "0/1").Points = append(vr.SeriesFor("client.connected", c.id, "0/1").Points, pt(s.t, connected))
			vr.SeriesFor("client.completed", c.id, "requests").Points = append(vr.SeriesFor("client.completed", c.id, "requests").Points, pt(s.t, float64(base.Completed+s.s.Completed)))
			rssMax = max(rssMax, rss)
			pendMax = max(pendMax, pend)
			if !math.IsNaN(faultStart) && s.t >= faultStart {
				if math.IsNaN(pendFromFault) {
					pendFromFault = 0
				}
				pendFromFault = max(pendFromFault, pend)
			}
			if s.t >= warm {
				staleMax = max(staleMax, st)
			}
			isStale := st > fresh.Seconds()
			if isStale {
				cLastStale = s.t
			}
			lastIsStale = isStale
		}
		for _, f := range finals {
			requests += float64(f.Completed)
			reconnects += float64(f.Reconnects)
			refreshes += float64(f.Refreshes)
		}
		// A death is a stale moment, and a client that is dead at the end
		// of the run never became fresh again.
		c.mu.Lock()
		for _, e := range c.sum.Exits {
			cLastStale = max(cLastStale, e.T)
			if len(cs) == 0 || e.T >= cs[len(cs)-1].t {
				lastIsStale = true
			}
		}
		c.mu.Unlock()
		if len(cs) == 0 || lastIsStale || (len(cs) > 0 && cs[len(cs)-1].t < runEnd-5) {
			neverFresh = true
		}
		lastStale = max(lastStale, cLastStale)
	}
	m["clients.oom_kills"] = float64(ooms)
	m["clients.deaths"] = float64(deaths)
	m["clients.rss_mb.max"] = rssMax
	m["clients.pending.max"] = pendMax
	if !math.IsNaN(pendFromFault) {
		m["clients.pending.max_from_fault"] = pendFromFault
	}
	m["clients.requests.total"] = requests
	m["clients.reconnects.total"] = reconnects
	m["clients.refreshes.total"] = refreshes
	m["clients.stale_s.max"] = staleMax
	if !math.IsNaN(faultEnd) {
		switch {
		case neverFresh:
			m["clients.fresh_after_fault_s"] = math.Inf(1)
		default:
			m["clients.fresh_after_fault_s"] = max(0, lastStale-faultEnd)
		}
	}

	vr.Metrics = map[string]verdict.Float{}
	for k, x := range m {
		vr.Metrics[k] = verdict.Float(x)
	}
	v.mu.Lock()
	vr.Events = append(vr.Events, v.events...)
	v.mu.Unlock()
	sort.SliceStable(vr.Events, func(i, j int) bool { return vr.Events[i].T < vr.Events[j].T })
	sort.SliceStable(vr.Series, func(i, j int) bool {
		if vr.Series[i].Name != vr.Series[j].Name {
			return vr.Series[i].Name < vr.Series[j].Name
		}
		return vr.Series[i].Source < vr.Series[j].Source
	})
}

func pt(t, v float64) reports.Point { return reports.Point{T: t, V: verdict.Float(v)} }

func findSeries(vr *reports.VariantResult, name, source string) *reports.Series {
	for _, s := range vr.Series {
		if s.Name == name && s.Source == source {
			return s
		}
	}
	return nil
}
