package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet"
	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

// KinesisEncodeShare is what sending one's full shard-map to a peer costs
// against taking one in (json.Encoder.Encode of the table, against
// json.Unmarshal, Table.Valid and Table.Digest, as harness/kinds/fleet/frontend does
// them). A harness run shows only the taking in (a starting server waits
// for it), so the sending is set from this ratio, measured once with a
// benchmark of those calls on a table of 4,000 shards: 1.1 ms against
// 9.1-10.3 ms on one core of the 2-core machine of the reference run.
// (Four times that decode, at the servers' 0.25 core, is the 38 ms per
// peer the reference run's cold start shows.)
const KinesisEncodeShare = 0.11

// The harness's own settings that a report does not carry.
const (
	// ksHealthEvery is the harness health checker's interval
	// (fleet.Config.HealthInterval, left at its default by the runner).
	ksHealthEvery = 1.0
	// ksServingShare is the share of a server's CPU quota taken by
	// serving: the load generator's 200 requests/s over 32 servers are
	// about 6 routing look-ups a second per server, microseconds each.
	ksServingShare = 0.0
)

// KinesisFromReport calibrates the model from a harness report of
// il-0384-kinesis-thread-per-peer for one of its variants, at the
// harness's scale.
//
// From the variant's effective workload: the servers, the servers added,
// the thread limit, per-peer threads or a pool (and its size), the cell
// size, the bootstrap (peers or store), the learning spread, the lease,
// the health check (grace, timeout, failures; every second, as the
// harness), and the restart pace. From the variant's fault windows (s from
// the variant's start): the addition at the start of add-capacity, its
// removal at its end, the restart at the start of restart-fleet; the
// horizon is the end of the observation (the warm-up's end, the
// timeline's length, the observation window).
//
// Measured in the run:
//   - BaseThreads: fleet.threads.before_trigger_max minus the peer threads
//     (the peers of a cell, per-peer) or the pool's threads.
//   - DecodeCost: the cold start of the variants that bootstrap from peers.
//     The fleet starts one server at a time over the start spread; a
//     server's time from its start to its first routed request grows with
//     the ready peers of its cell that send it their full shard-map. The
//     slope of a robust line (Theil-Sen) through (ready peers, time to
//     route) is a map's cost, in seconds of a server's full CPU quota.
//     EncodeCost is KinesisEncodeShare of it.
//   - StoreCost: the intercept of the same line for the variants that
//     bootstrap from the store (a server with no peer: its start and the
//     table read from etcd); DigestCost its slope (clamped at 0). A server
//     bootstrapping from peers with no ready peer first waits the
//     bootstrap timeout, then reads the store: that wait is added.
//   - Load: the harness runs every server on one host of Host.Cores cores,
//     each server held to cpu_quota, and a restart of every server at once
//     has them all compete for it. Load is the share of its quota a server
//     cannot get then (serving is negligible here: about 6 look-ups a
//     second per server). For an all-at-once restart it is measured where
//     the run shows it: the servers that bootstrap from the store took, in
//     an all-at-once restart, median(launch to first routed request) =
//     slowdown × their cold start's (Load = 1 - 1/slowdown; 1.13 s against
//     0.21 s, 5.4, in the reference run). Without such a variant, and for
//     a paced restart: n servers building at once get Cores/n of a core
//     when that is less than their quota (all at once: n = servers; paced:
//     pace × build time); 32 × 0.25 on 2 cores would be Load 0.75.
//
// Every cost is in seconds of a server's CPU share, as the model takes
// them; the bootstrap timeout is a wait, not work, and is converted so
// that it stays the same whatever the Load.
func KinesisFromReport(r *reports.Report, variant string) (Kinesis, error) {
	var m Kinesis
	fail := func(format string, args ...any) (Kinesis, error) {
		return Kinesis{}, fmt.Errorf("calibrate il-0384: "+format, args...)
	}
	if r == nil || r.Scenario == nil {
		return fail("the report has no scenario")
	}
	v := r.Variant(variant)
	if v == nil {
		var names []string
		for _, x := range r.Variants {
			names = append(names, x.Name)
		}
		return fail("no variant %q in the report (has %v)", variant, names)
	}
	fl, err := ksFleet(v)
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case fl.Servers < 2:
		return fail("variant %s: workload.fleet.servers is %d, want at least 2", variant, fl.Servers)
	case fl.ThreadLimit <= 0:
		return fail("variant %s: workload.fleet.thread_limit missing", variant)
	case fl.PeerThreads != "per-peer" && fl.PeerThreads != "pool":
		return fail("variant %s: workload.fleet.peer_threads %q, want per-peer or pool", variant, fl.PeerThreads)
	case fl.Bootstrap != "peers" && fl.Bootstrap != "store":
		return fail("variant %s: workload.fleet.bootstrap %q, want peers or store", variant, fl.Bootstrap)
	case r.Host.Cores < 1:
		return fail("the report gives no host cores (host.cores): the servers' share of the host cannot be computed")
	}

	// The timeline.
	add, restart := ksFault(v, "add-capacity"), ksFault(v, "restart-fleet")
	if add == nil {
		return fail("variant %s has no add-capacity fault window", variant)
	}
	if restart == nil {
		return fail("variant %s has no restart-fleet fault window", variant)
	}
	plan, err := scenarios.PlanOf(r)
	if err != nil {
		return fail("%v", err)
	}
	horizon, err := ksHorizon(plan, v, add)
	if err != nil {
		return fail("variant %s: %v", variant, err)
	}
	if !(add.Start < add.End && add.End <= restart.Start && restart.Start < horizon) {
		return fail("variant %s: fault windows out of order (add-capacity %.1f-%.1f s, restart-fleet from %.1f s, end %.1f s)",
			variant, add.Start, add.End, restart.Start, horizon)
	}

	// Threads besides the peers'.
	before, ok := v.Metrics["fleet.threads.before_trigger_max"]
	if !ok || math.IsNaN(float64(before)) {
		return fail("variant %s has no metric fleet.threads.before_trigger_max", variant)
	}
	perPeer := fl.PeerThreads == "per-peer"
	pool := max(fl.PoolThreads, 1) // what the harness passes the servers
	peers := ksCellPeers(fl.Servers, fl.CellSize)
	base := int(math.Round(float64(before)))
	if perPeer {
		base -= peers
	} else {
		base -= pool
	}
	if base < 1 {
		return fail("variant %s: fleet.threads.before_trigger_max = %v leaves %d threads besides the peer threads", variant, float64(before), base)
	}

	// Costs, from the cold starts of the run's variants.
	cold, err := ksCalibrateCosts(r, fl)
	if err != nil {
		return fail("%v", err)
	}

	// The host: how many servers build at once, and their share of it.
	quota := fl.CPUQuota
	if quota <= 0 {
		quota = float64(max(fl.GoMaxProcs, 1))
	}
	building := float64(fl.Servers) // all at once
	if fl.RestartRate > 0 {
		build := cold.storeStart + cold.digest*float64(peers)
		if fl.Bootstrap == "peers" {
			build = cold.peerStart + cold.decode*float64(peers)
		}
		building = max(1, fl.RestartRate*build)
	}
	share := math.Min(quota, float64(r.Host.Cores)/building) / quota
	if fl.RestartRate == 0 && cold.slowdown > 0 {
		share = 1 / cold.slowdown // as measured
	}
	load := math.Min(1-(1-ksServingShare)*share, 0.95)

	timeout := fl.BootstrapTimeout.D().Seconds()
	if timeout <= 0 {
		timeout = 3 // frontend.Config's default
	}
	store := cold.storeStart
	if fl.Bootstrap == "peers" {
		// Wait the timeout (wall time: work at 1-Load), then read the store.
		store = timeout*(1-load) + cold.storeStart
	}

	lease := fl.LeaseTTL.D().Seconds()
	if lease <= 0 {
		lease = 3 // the runner's default
	}
	lease = math.Ceil(lease) // the harness grants whole seconds
	hTimeout := fl.HealthTimeout.D().Seconds()
	if hTimeout <= 0 {
		hTimeout = 1
	}
	grace := fl.HealthGrace.D().Seconds()
	if grace <= 0 {
		grace = 15
	}
	failures := fl.HealthFailures
	if failures <= 0 {
		failures = 3
	}
	m = Kinesis{
		Servers: fl.Servers, Added: fl.Added(), ThreadLimit: fl.ThreadLimit, BaseThreads: base,
		PerPeer: perPeer, PoolThreads: pool, CellSize: fl.CellSize, FromStore: fl.Bootstrap == "store",
		LearnSpread: fl.LearnSpread.D().Seconds(),
		DecodeCost:  cold.decode, EncodeCost: cold.decode * KinesisEncodeShare, DigestCost: cold.digest, StoreCost: store,
		Load:        load,
		HealthEvery: ksHealthEvery, HealthTimeout: hTimeout, HealthGrace: grace, HealthFailures: failures,
		LeaseTTL: lease,
		AddSpan:  0, // the harness starts the added servers together
		AddAt:    add.Start, RemoveAt: add.End, RestartAt: restart.Start, RestartRate: fl.RestartRate,
		// Sampled finely enough to see an all-at-once restart that builds
		// within a second (see KinesisRecovery).
		Horizon: horizon, Sample: 0.1, Seed: uint64(max(r.Seed, 0)),
	}
	if perPeer {
		m.PoolThreads = 0
	}
	return m, nil
}

// KinesisRecovery is the recovery after the restart as the harness counts
// it (fleet.recovery_after_restart_s): the harness counts requests in
// whole seconds of the run's clock and takes the first second from which
// every second to the end routes at least 99% of them (with 32 servers:
// every server routes), counted only if that lasted 5 s before the end.
// Here: the first whole second at or after the sample from which every
// original server routes to the end, less RestartAt; +Inf otherwise. It
// reads the Routing series, so that a restart that brings every server
// back between two health checks counts (KinesisResult.Recovered then
// keeps the streak that began before the restart and says +Inf).
func KinesisRecovery(m Kinesis, r KinesisResult) float64 {
	back := math.Inf(1)
	for i := len(r.T) - 1; i >= 0 && r.T[i] >= m.RestartAt; i-- {
		if r.Routing[i] < 1 {
			break
		}
		back = r.T[i]
	}
	if math.IsInf(back, 1) {
		return back
	}
	sec := math.Ceil(back - 1e-9)
	if math.Floor(m.Horizon)-sec < 5 {
		return math.Inf(1)
	}
	return sec - m.RestartAt
}

// ksFleet is the variant's effective fleet as the report recorded it.
func ksFleet(v *reports.VariantResult) (*fleet.Settings, error) {
	fl := fleet.NewSettings()
	kind, err := v.DecodeWorkload(fl)
	if err != nil {
		return nil, err
	}
	if kind != fleet.KindName {
		return nil, fmt.Errorf("variant %s: workload kind %q, want %s", v.Name, kind, fleet.KindName)
	}
	return fl, nil
}

func ksFault(v *reports.VariantResult, name string) *reports.FaultWindow {
	for i := range v.Faults {
		if v.Faults[i].Fault == name {
			return &v.Faults[i]
		}
	}
	return nil
}

// ksHorizon is the end of the variant's observation: the warm-up ended
// when add-capacity was injected (less its offset), and the run lasts the
// timeline's length and the observation window after it (the restart's
// window ends early when the fleet is back; the run does not).
func ksHorizon(p *record.Plan, v *reports.VariantResult, add *reports.FaultWindow) (float64, error) {
	var at, end float64
	found := false
	for _, f := range p.Faults {
		if f.Fault == "add-capacity" && !found {
			at, found = f.AtS, true
		}
		end = math.Max(end, f.AtS+f.DurationS)
	}
	if !found {
		return 0, errors.New("the scenario's timeline has no add-capacity step")
	}
	h := add.Start - at + end + p.ObserveS
	// A run cut short ends with its last measured second.
	for _, sr := range v.Series {
		if sr.Name == "fleet.routing_success" && len(sr.Points) > 0 {
			last := math.Floor(sr.Points[len(sr.Points)-1].T) + 1
			if last < h {
				h = last
			}
		}
	}
	return h, nil
}

// ksCellPeers is the peers a server of a full cell has.
func ksCellPeers(servers, cell int) int {
	if cell <= 0 || cell > servers {
		return servers - 1
	}
	return cell - 1
}

// ksColdStart is a cold start's servers: how many ready peers of its cell
// each found at its start, and how long it took to route.
type ksColdStart struct {
	peers, delay []float64
}

// ksCosts are the costs measured in a run's cold starts, in seconds of a
// server's full CPU quota.
type ksCosts struct {
	decode, peerStart   float64 // bootstrap from peers: per ready peer, and the rest
	digest, storeStart  float64 // bootstrap from the store
	peerPoints, storeAt int
	// slowdown: how much longer a server bootstrapping from the store took
	// to route when the whole fleet was restarted at once than at its cold
	// start (0: no such restart in the run); from: the variant.
	slowdown     float64
	slowdownFrom string
	restartDelay []float64
}

// ksCalibrateCosts fits the costs on the cold starts of every variant of
// the run (every variant runs the same server on the same host): the
// per-map cost on those bootstrapping from peers, the store read and the
// digest on those bootstrapping from the store. What fl's bootstrap needs
// must be measurable.
func ksCalibrateCosts(r *reports.Report, fl *fleet.Settings) (ksCosts, error) {
	var c ksCosts
	var fromPeers, fromStore, firsts ksColdStart
	var errs []string
	for _, x := range r.Variants {
		xf, err := ksFleet(x)
		if err != nil {
			continue
		}
		add := ksFault(x, "add-capacity")
		if add == nil {
			continue
		}
		cs, err := ksColdStartOf(x, xf, add.Start)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		timeout := xf.BootstrapTimeout.D().Seconds()
		if timeout <= 0 {
			timeout = 3
		}
		for i, k := range cs.peers {
			switch {
			case xf.Bootstrap == "store":
				fromStore.peers = append(fromStore.peers, k)
				fromStore.delay = append(fromStore.delay, cs.delay[i])
			case k >= 1:
				fromPeers.peers = append(fromPeers.peers, k)
				fromPeers.delay = append(fromPeers.delay, cs.delay[i])
			default: // no peer to ask: the timeout, then the store
				firsts.delay = append(firsts.delay, cs.delay[i]-timeout)
			}
		}
	}
	why := ""
	if len(errs) > 0 {
		why = " (" + strings.Join(errs, "; ") + ")"
	}
	if fl.Bootstrap == "peers" {
		b, a, ok := ksTheilSen(fromPeers)
		if !ok {
			return c, fmt.Errorf("no cold start of a variant bootstrapping from peers with servers that found different numbers of ready peers: the cost of a shard-map cannot be measured%s", why)
		}
		c.decode, c.peerStart, c.peerPoints = math.Max(b, 0), math.Max(a, 0), len(fromPeers.delay)
	}
	if b, a, ok := ksTheilSen(fromStore); ok {
		c.digest, c.storeStart, c.storeAt = math.Max(b, 0), math.Max(a, 0), len(fromStore.delay)
	} else if fl.Bootstrap == "store" {
		return c, fmt.Errorf("no cold start of a variant bootstrapping from the store: the store read cannot be measured%s", why)
	} else if len(firsts.delay) > 0 {
		// Only the fleet's first servers read the store.
		c.storeStart, c.storeAt = math.Max(ksMedian(firsts.delay), 0), len(firsts.delay)
	} else {
		return c, fmt.Errorf("no server of the run read the shard table from the store at its cold start: the store read cannot be measured%s", why)
	}
	// The host's share in an all-at-once restart: the servers that
	// bootstrap from the store do the same work then as at their cold
	// start, only all together.
	for _, x := range r.Variants {
		xf, err := ksFleet(x)
		restart := ksFault(x, "restart-fleet")
		if err != nil || restart == nil || xf.Bootstrap != "store" || xf.RestartRate != 0 || c.storeStart <= 0 {
			continue
		}
		list, err := ksStartsIn(x, xf, fmt.Sprintf("in the first %.0f s of the restart", ksRestartWindow), restart.Start, restart.Start+ksRestartWindow, restart.Start+2*ksRestartWindow)
		if err != nil {
			continue
		}
		var delays []float64
		for _, s := range list {
			if !math.IsNaN(s.ready) {
				delays = append(delays, s.ready-s.start)
			}
		}
		c.slowdown, c.slowdownFrom = math.Max(ksMedian(delays)/c.storeStart, 1), x.Name
		c.restartDelay = delays
		break
	}
	return c, nil
}

// ksRestartWindow: the servers an all-at-once restart launches are those
// launched within this of its start.
const ksRestartWindow = 10.0

// ksStart is one server's start: when it was launched and when it first
// routed.
type ksStart struct {
	id           string
	cell         int
	start, ready float64
}

// ksStartsIn times the starts of a variant's original servers launched in
// [from, to) (their first server-start event in it), each routing before
// until: when it first routed is its server.routing_success series' first
// second with a routed request, less the part of that second it refused;
// without those series, the fleet.servers_routing count (the n-th server
// to route is the n-th launched).
func ksStartsIn(v *reports.VariantResult, fl *fleet.Settings, what string, from, to, until float64) ([]*ksStart, error) {
	var list []*ksStart
	seen := map[string]bool{}
	for _, e := range v.Events {
		if e.Kind != "server-start" || e.T < from || e.T >= to || seen[e.Source] {
			continue
		}
		seen[e.Source] = true
		idx, err := strconv.Atoi(strings.TrimLeftFunc(e.Source, func(r rune) bool { return r < '0' || r > '9' }))
		if err != nil || idx < 1 {
			idx = len(list) + 1
		}
		if idx > fl.Servers {
			continue // added capacity
		}
		cell := 0
		if fl.CellSize > 0 {
			cell = (idx - 1) / fl.CellSize
		}
		list = append(list, &ksStart{id: e.Source, cell: cell, start: e.T, ready: math.NaN()})
	}
	if len(list) < 3 {
		return nil, fmt.Errorf("variant %s has %d server-start events %s", v.Name, len(list), what)
	}
	slices.SortFunc(list, func(a, b *ksStart) int { return cmp.Compare(a.start, b.start) })
	perServer := map[string]*reports.Series{}
	var count *reports.Series
	for _, s := range v.Series {
		switch s.Name {
		case "server.routing_success":
			perServer[s.Source] = s
		case "fleet.servers_routing":
			count = s
		}
	}
	found := 0
	for _, s := range list {
		sr := perServer[s.id]
		if sr == nil {
			continue
		}
		for _, p := range sr.Points {
			x := float64(p.V)
			if p.T+0.5 <= s.start || !(x > 0) || p.T >= until {
				continue
			}
			s.ready = math.Max(p.T-0.5+(1-x), s.start)
			found++
			break
		}
	}
	if found == 0 && count != nil {
		n := 0
		for _, p := range count.Points {
			if p.T+0.5 <= from || p.T >= until {
				continue
			}
			for n < len(list) && float64(p.V) >= float64(n+1) {
				list[n].ready = math.Max(p.T-0.5, list[n].start)
				n++
			}
		}
		found = n
	} else if found == 0 && len(perServer) == 0 {
		return nil, fmt.Errorf("variant %s has neither server.routing_success nor fleet.servers_routing series to time its servers' starts", v.Name)
	}
	if found < 3 {
		return nil, fmt.Errorf("variant %s: only %d of the servers launched %s routed by %.1f s", v.Name, found, what, until)
	}
	return list, nil
}

// ksColdStartOf is a variant's cold start: every original server launched
// before the addition, with the ready peers of its cell at its launch.
func ksColdStartOf(v *reports.VariantResult, fl *fleet.Settings, before float64) (ksColdStart, error) {
	var cs ksColdStart
	list, err := ksStartsIn(v, fl, fmt.Sprintf("before the addition (%.1f s)", before), math.Inf(-1), before, before)
	if err != nil {
		return cs, err
	}
	for _, s := range list {
		if math.IsNaN(s.ready) {
			continue
		}
		k := 0
		for _, o := range list {
			if o != s && o.cell == s.cell && !math.IsNaN(o.ready) && o.ready <= s.start {
				k++
			}
		}
		cs.peers = append(cs.peers, float64(k))
		cs.delay = append(cs.delay, s.ready-s.start)
	}
	return cs, nil
}

// ksTheilSen is the Theil-Sen line through the points: the median of the
// slopes between pairs, and the median intercept for it. It ignores the
// odd server that took far longer than the rest, and the quantisation of
// the harness's one-second buckets.
func ksTheilSen(cs ksColdStart) (slope, intercept float64, ok bool) {
	var slopes []float64
	for i := range cs.peers {
		for j := i + 1; j < len(cs.peers); j++ {
			if dk := cs.peers[j] - cs.peers[i]; dk != 0 {
				slopes = append(slopes, (cs.delay[j]-cs.delay[i])/dk)
			}
		}
	}
	if len(slopes) == 0 || len(cs.peers) < 3 {
		return 0, 0, false
	}
	slope = ksMedian(slopes)
	rest := make([]float64, len(cs.peers))
	for i := range cs.peers {
		rest[i] = cs.delay[i] - slope*cs.peers[i]
	}
	return slope, ksMedian(rest), true
}

func ksMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// KinesisHarnessMetrics reads a run the way the harness reads its own,
// under the harness's metric names: the worst and best routing once every
// server has learned of the new capacity until it is removed (the model has
// no per-server series: the share of the original servers routing at its
// worst and best samples), threads against the limit, removals, and the
// recovery after the restart (KinesisRecovery).
func KinesisHarnessMetrics(m Kinesis, r KinesisResult) map[string]float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, t := range r.T {
		if t >= m.AddAt+m.LearnSpread && t < m.RemoveAt {
			lo, hi = math.Min(lo, r.Routing[i]), math.Max(hi, r.Routing[i])
		}
	}
	return map[string]float64{
		"fleet.routing_success.min_server_after_trigger": lo,
		"fleet.routing_success.max_server_after_trigger": hi,
		"fleet.threads.max":                float64(r.MaxThreads),
		"fleet.threads.max_ratio_to_limit": float64(r.MaxThreads) / float64(m.ThreadLimit),
		"fleet.recovery_after_restart_s":   KinesisRecovery(m, r),
		"fleet.health_removals":            float64(r.Removals),
	}
}
