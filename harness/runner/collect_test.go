package runner

import (
	"github.com/chaoslab/chaoslab/harness/faults"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/zkmirror"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// The synthetic run: the variant's clock starts at collectT0; the warm-up
// ends at 10 s, the fault lasts from 10 s to 25 s and the run ends at 45 s.
// The writer acknowledges write s at s*100ms (4 hot znodes, 10 writes/s) up
// to the end of the run. A mirror is fresh within 3 s.
var collectT0 = time.Date(2019, 1, 18, 9, 9, 0, 0, time.UTC)

const (
	collectHot        = 4
	collectWriteEvery = 100 * time.Millisecond
	collectFaultStart = 10.0
	collectFaultEnd   = 25.0
	collectRunEnd     = 45.0
)

func collectScenario(t *testing.T) *scenarios.Scenario {
	t.Helper()
	s, err := scenarios.Find("IL-0587")
	require.NoError(t, err)
	// A short timeline that matches the fault window below.
	s.Timeline = scenarios.Timeline{
		Warmup:  scenarios.Duration(10 * time.Second),
		Faults:  []scenarios.FaultStep{{At: 0, Fault: "pause", Target: "leader", Duration: scenarios.Duration(15 * time.Second)}},
		Observe: scenarios.Duration(20 * time.Second),
	}
	require.Equal(t, time.Duration(collectRunEnd*float64(time.Second)), s.RunLength())
	return s
}

func collectVariant(t *testing.T, faults ...reports.FaultWindow) *variantRun {
	t.Helper()
	s := collectScenario(t)
	w, err := s.EffectiveWorkload("vulnerable")
	require.NoError(t, err)
	w.FreshWithin = scenarios.Duration(3 * time.Second)
	vr := &reports.VariantResult{Name: "vulnerable", Workload: w, Faults: faults}
	return &variantRun{s: s, name: "vulnerable", vr: vr, t0: collectT0}
}

func faultWindow() reports.FaultWindow {
	return reports.FaultWindow{Fault: "pause", Target: "leader", Member: "zk1", Start: collectFaultStart, End: collectFaultEnd}
}

// collectWriter returns a Writer whose log holds writes 1..n, write s
// acknowledged at collectT0 + s*100ms.
//
// Writer.log is unexported and only Writer.Run (which needs a ZooKeeper
// connection) appends to it, so the test sets the field by reflection. It
// fails loudly if the field changes shape.
func collectWriter(t *testing.T, n int) writerLog {
	t.Helper()
	log := make([]zkmirror.Write, n)
	for i := range log {
		log[i] = zkmirror.Write{Seq: int64(i + 1), Path: "/hot", At: collectT0.Add(time.Duration(i+1) * collectWriteEvery)}
	}
	return writerLog(log)
}

// upTo is the NextSeq of a mirror that has applied every write acknowledged
// by run time u (whole seconds): its staleness at t is t - (u + 0.1 s).
func upTo(u float64) int64 { return int64(math.Round(u*10)) + 1 }

func csample(t float64, inc int, next int64) clientSample {
	ms := collectT0.Add(time.Duration(t * float64(time.Second))).UnixMilli()
	return clientSample{t: t, inc: inc, s: zkmirror.Sample{UnixMS: ms, ID: "c", NextSeq: next}}
}

// freshSamples: a mirror sampled every second from `from` to `to`, always current.
func freshSamples(from, to float64, inc int) []clientSample {
	var out []clientSample
	for t := from; t <= to; t++ {
		out = append(out, csample(t, inc, upTo(t)))
	}
	return out
}

// frozenSamples is a mirror that stopped applying writes at u: from `from`
// to `to` it reports the NextSeq it had at u.
func frozenSamples(from, to, u float64, inc int) []clientSample {
	var out []clientSample
	for t := from; t <= to; t++ {
		out = append(out, csample(t, inc, upTo(u)))
	}
	return out
}

func newClient(id string, samples ...[]clientSample) *client {
	c := &client{id: id}
	c.sum.ID = id
	for _, s := range samples {
		c.samples = append(c.samples, s...)
	}
	for i := range c.samples {
		c.samples[i].s.ID = id
	}
	return c
}

// staleClient is fresh except while frozen at u between from and to.
func staleClient(id string, from, to, u float64) *client {
	return newClient(id, freshSamples(1, from-1, 0), frozenSamples(from, to, u, 0), freshSamples(to+1, collectRunEnd, 0))
}

func metric(t *testing.T, v *variantRun, name string) float64 {
	t.Helper()
	x, ok := v.vr.Metrics[name]
	require.True(t, ok, "metric %s missing; have %v", name, v.vr.Metrics)
	return float64(x)
}

func series(t *testing.T, v *variantRun, name, source string) *reports.Series {
	t.Helper()
	for _, s := range v.vr.Series {
		if s.Name == name && s.Source == source {
			return s
		}
	}
	require.Failf(t, "series missing", "%s of %s", name, source)
	return nil
}

func values(s *reports.Series) []float64 {
	out := make([]float64, len(s.Points))
	for i, p := range s.Points {
		out[i] = float64(p.V)
	}
	return out
}

func times(s *reports.Series) []float64 {
	out := make([]float64, len(s.Points))
	for i, p := range s.Points {
		out[i] = p.T
	}
	return out
}

func TestCollectStaleSamplesFollowTheWritersLog(t *testing.T) {
	// Sanity of the fixture: a mirror frozen at 11 s is 16.9 s stale at 28 s.
	log := collectWriter(t, int(collectRunEnd*10)).Log()
	assert.InDelta(t, 16.9, zkmirror.Staleness(log, upTo(11), collectT0.Add(28*time.Second)).Seconds(), 1e-9)
	assert.Zero(t, zkmirror.Staleness(log, upTo(28), collectT0.Add(28*time.Second)))
}

func TestCollectServers(t *testing.T) {
	v := collectVariant(t, faultWindow())
	srv := &serverSampler{samples: []serverSample{
		// Out of order on purpose: collect sorts them.
		{t: 12, member: "zk1", state: "leader", outstanding: 300, avgLatency: 40, conns: 6, ok: true},
		{t: 5, member: "zk1", state: "leader", outstanding: 900, avgLatency: 3, conns: 12, ok: true},
		{t: 9.99, member: "zk2", state: "follower", outstanding: 800, avgLatency: 2, conns: 12, ok: true},
		{t: 10, member: "zk2", state: "follower", outstanding: 450, avgLatency: 7, conns: 12, ok: true},
		{t: 20, member: "zk2", state: "follower", outstanding: 400, avgLatency: 120, conns: 4, ok: true},
		// A member that did not answer: its figures are not figures.
		{t: 22, member: "zk1", outstanding: 5000, avgLatency: 9999, conns: 99, ok: false},
		// After the fault: connections per second, summed over members.
		{t: 25.2, member: "zk1", state: "follower", outstanding: 10, avgLatency: 5, conns: 10, ok: true},
		{t: 25.3, member: "zk2", state: "leader", outstanding: 20, avgLatency: 5, conns: 12, ok: true},
		{t: 26.1, member: "zk1", state: "follower", outstanding: 1, avgLatency: 1, conns: 5, ok: true},
		{t: 26.2, member: "zk2", state: "leader", outstanding: 2, avgLatency: 1, conns: 6, ok: true},
		{t: 27.1, member: "zk1", state: "follower", outstanding: 1, avgLatency: 1, conns: 12, ok: true},
		{t: 27.2, member: "zk2", state: "leader", outstanding: 2, avgLatency: 1, conns: 12, ok: true},
	}}
	v.collect(nil, srv, collectWriter(t, 450).Log())

	assert.Equal(t, 900.0, metric(t, v, "servers.outstanding_requests.max"))
	// Only samples at or after the fault start: 800 at 9.99 s is before it,
	// 450 at 10 s exactly is the peak; the unanswered 5000 is ignored.
	assert.Equal(t, 450.0, metric(t, v, "servers.outstanding_requests.max_from_fault"))
	assert.Equal(t, 120.0, metric(t, v, "servers.avg_latency_ms.max"))
	assert.Equal(t, 11.0, metric(t, v, "servers.connections.min_after_fault"))

	out1 := series(t, v, "server.outstanding_requests", "zk1")
	assert.Equal(t, "requests", out1.Unit)
	assert.Equal(t, []float64{5, 12, 22, 25.2, 26.1, 27.1}, times(out1), "sorted; the unanswered sample is a gap")
	vals := values(out1)
	assert.True(t, math.IsNaN(vals[2]), "no answer is NaN (a gap in the line), not a figure")
	assert.Equal(t, []float64{900, 300, 10, 1, 1}, append(vals[:2:2], vals[3:]...))
	out2 := series(t, v, "server.outstanding_requests", "zk2")
	assert.Equal(t, []float64{800, 450, 400, 20, 2, 2}, values(out2))
	assert.Equal(t, "ms", series(t, v, "server.avg_latency_ms", "zk1").Unit)
	assert.Equal(t, []float64{12, 12, 4, 12, 6, 12}, values(series(t, v, "server.connections", "zk2")))
	assert.Equal(t, "connections", series(t, v, "server.connections", "zk2").Unit)

	// State changes are events.
	var states []reports.Event
	for _, e := range v.vr.Events {
		if e.Kind == "state" {
			states = append(states, e)
		}
	}
	assert.Equal(t, []reports.Event{
		{T: 5, Kind: "state", Source: "zk1", Detail: "now leader"},
		{T: 9.99, Kind: "state", Source: "zk2", Detail: "now follower"},
		{T: 25.2, Kind: "state", Source: "zk1", Detail: "now follower"},
		{T: 25.3, Kind: "state", Source: "zk2", Detail: "now leader"},
	}, states)

	// No clients: nothing to be stale, nobody died.
	assert.Equal(t, 0.0, metric(t, v, "clients.oom_kills"))
	assert.Equal(t, 0.0, metric(t, v, "clients.deaths"))
	assert.Equal(t, 0.0, metric(t, v, "clients.fresh_after_fault_s"))
}

func TestCollectWithoutFault(t *testing.T) {
	v := collectVariant(t)
	srv := &serverSampler{samples: []serverSample{
		{t: 5, member: "zk1", outstanding: 70, conns: 3, ok: true},
		{t: 30, member: "zk1", outstanding: 90, conns: 3, ok: true},
	}}
	v.collect([]*client{staleClient("client-01", 12, 28, 11)}, srv, collectWriter(t, 450).Log())
	assert.Equal(t, 90.0, metric(t, v, "servers.outstanding_requests.max"))
	for _, m := range []string{"servers.outstanding_requests.max_from_fault", "servers.connections.min_after_fault", "clients.fresh_after_fault_s", "clients.pending.max_from_fault"} {
		_, ok := v.vr.Metrics[m]
		assert.False(t, ok, "%s needs a fault", m)
	}
}

func TestCollectClientPendingFromTheFault(t *testing.T) {
	// The initial load (3,000 pending at 2 s) is before the fault; from the
	// fault (10 s) on, client-02's 40 is the peak.
	v := collectVariant(t, faultWindow())
	mk := func(t float64, inflight, queued int64) clientSample {
		s := csample(t, 0, upTo(t))
		s.s.InFlight, s.s.Queued = inflight, queued
		return s
	}
	c1 := newClient("client-01", []clientSample{mk(2, 2000, 1000), mk(12, 8, 3), mk(collectRunEnd, 0, 0)})
	c2 := newClient("client-02", []clientSample{mk(9, 900, 0), mk(20, 8, 32), mk(collectRunEnd, 1, 0)})
	v.collect([]*client{c1, c2}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.Equal(t, 3000.0, metric(t, v, "clients.pending.max"))
	assert.Equal(t, 40.0, metric(t, v, "clients.pending.max_from_fault"))
}

func TestCollectNoSampleFromTheFaultOn(t *testing.T) {
	// The servers did not answer once the fault began: the peak from the
	// fault on is not measured (not 0, which would pass any bound).
	v := collectVariant(t, faultWindow())
	srv := &serverSampler{samples: []serverSample{
		{t: 5, member: "zk1", outstanding: 70, ok: true},
		{t: 11, member: "zk1", ok: false},
	}}
	v.collect(nil, srv, collectWriter(t, 450).Log())
	assert.Equal(t, 70.0, metric(t, v, "servers.outstanding_requests.max"))
	_, ok := v.vr.Metrics["servers.outstanding_requests.max_from_fault"]
	assert.False(t, ok)
}

func TestCollectFreshAfterFault(t *testing.T) {
	v := collectVariant(t, faultWindow())
	// client-01 misses writes from 11 s: stale (> 3 s) from 15 s to 28 s.
	// client-02 misses writes from 20 s: stale from 24 s to 30 s.
	c1 := staleClient("client-01", 12, 28, 11)
	c2 := staleClient("client-02", 21, 30, 20)
	v.collect([]*client{c1, c2}, &serverSampler{}, collectWriter(t, 450).Log())

	// The last stale moment of any client (30 s) minus the end of the fault.
	assert.InDelta(t, 5.0, metric(t, v, "clients.fresh_after_fault_s"), 1e-9)
	// The worst staleness after the warm-up: client-01 at 28 s.
	assert.InDelta(t, 16.9, metric(t, v, "clients.stale_s.max"), 1e-9)
	assert.Equal(t, 0.0, metric(t, v, "clients.deaths"))

	st := series(t, v, "client.stale_s", "client-01")
	assert.Equal(t, "s", st.Unit)
	require.Len(t, st.Points, 45)
	assert.Equal(t, 1.0, st.Points[0].T)
	assert.Equal(t, 0.0, float64(st.Points[10].V), "fresh at 11 s")
	assert.InDelta(t, 2.9, float64(st.Points[13].V), 1e-9, "14 s: behind but within 3 s")
	assert.InDelta(t, 3.9, float64(st.Points[14].V), 1e-9, "15 s: stale")
	assert.InDelta(t, 16.9, float64(st.Points[27].V), 1e-9, "28 s")
	assert.Equal(t, 0.0, float64(st.Points[28].V), "29 s: caught up")

	// The verdict the built-in hypothesis reaches on it.
	hs := []scenarios.Hypothesis{{ID: "mirrors-fresh-after-fault", Metric: "clients.fresh_after_fault_s", Op: "<=", Threshold: 10}}
	m := map[string]float64{}
	for k, x := range v.vr.Metrics {
		m[k] = float64(x)
	}
	_, vd, _ := verdict.Hypotheses(hs, m)
	assert.Equal(t, verdict.Held, vd)
}

func TestCollectFreshWithin(t *testing.T) {
	// A mirror frozen at 26 s from 27 s to 30 s is 0.9, 1.9, 2.9 and 3.9 s
	// behind: whether that is stale depends on the workload's fresh_within.
	for _, c := range []struct {
		fresh time.Duration
		to    float64
		want  float64
	}{
		{3 * time.Second, 30, 5},         // 3.9 s at 30 s is stale
		{3 * time.Second, 29, 0},         // 2.9 s is not
		{2500 * time.Millisecond, 29, 4}, // it is within 2.5 s
		{4 * time.Second, 30, 0},
		{0, 29, 4}, // unset: 2 s
		{0, 28, 0}, // 1.9 s
	} {
		v := collectVariant(t, faultWindow())
		v.vr.Workload.FreshWithin = scenarios.Duration(c.fresh)
		v.collect([]*client{staleClient("client-01", 27, c.to, 26)}, &serverSampler{}, collectWriter(t, 450).Log())
		assert.InDelta(t, c.want, metric(t, v, "clients.fresh_after_fault_s"), 1e-9, "fresh within %s, frozen until %v", c.fresh, c.to)
	}
}

func TestCollectFreshBeforeFaultEnd(t *testing.T) {
	// Every stale moment is before the fault ended: fresh at once.
	v := collectVariant(t, faultWindow())
	c := staleClient("client-01", 12, 20, 11)
	v.collect([]*client{c}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.Equal(t, 0.0, metric(t, v, "clients.fresh_after_fault_s"))
}

func TestCollectStaleAtLastSampleNeverFresh(t *testing.T) {
	v := collectVariant(t, faultWindow())
	// client-02 stops applying writes at 40 s and is still stale at 45 s.
	c1 := staleClient("client-01", 12, 28, 11)
	c2 := newClient("client-02", freshSamples(1, 40, 0), frozenSamples(41, collectRunEnd, 40, 0))
	v.collect([]*client{c1, c2}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.True(t, math.IsInf(metric(t, v, "clients.fresh_after_fault_s"), 1))

	hs := []scenarios.Hypothesis{{ID: "mirrors-fresh-after-fault", Metric: "clients.fresh_after_fault_s", Op: "<=", Threshold: 10}}
	m := map[string]float64{}
	for k, x := range v.vr.Metrics {
		m[k] = float64(x)
	}
	_, vd, reason := verdict.Hypotheses(hs, m)
	assert.Equal(t, verdict.Violated, vd)
	assert.Contains(t, reason, "never")
}

func TestCollectDiedAfterLastSampleNeverFresh(t *testing.T) {
	v := collectVariant(t, faultWindow())
	c1 := staleClient("client-01", 12, 28, 11)
	c2 := newClient("client-02", freshSamples(1, 44, 0))
	c2.sum.Starts = 1
	c2.sum.Exits = []reports.Exit{{T: 44.5, Code: -1, Signal: "killed", OOM: true, How: "killed by the kernel OOM killer"}}
	c2.sum.OOMKills = 1
	c2.events = []reports.Event{{T: 44.5, Kind: "oom-kill", Source: "client-02", Detail: "killed by the kernel OOM killer"}}
	v.collect([]*client{c1, c2}, &serverSampler{}, collectWriter(t, 450).Log())

	assert.True(t, math.IsInf(metric(t, v, "clients.fresh_after_fault_s"), 1))
	assert.Equal(t, 1.0, metric(t, v, "clients.oom_kills"))
	assert.Equal(t, 1.0, metric(t, v, "clients.deaths"))
	require.Len(t, v.vr.Clients, 2)
	assert.Equal(t, "client-02", v.vr.Clients[1].ID)
	assert.Equal(t, 1, v.vr.Clients[1].OOMKills)
	assert.Contains(t, v.vr.Events, reports.Event{T: 44.5, Kind: "oom-kill", Source: "client-02", Detail: "killed by the kernel OOM killer"})
}

func TestCollectDeathIsAStaleMoment(t *testing.T) {
	// client-02 dies at 31.5 s and its next incarnation is fresh at once:
	// it was last stale when it died.
	v := collectVariant(t, faultWindow())
	c1 := staleClient("client-01", 12, 28, 11)
	c2 := newClient("client-02", freshSamples(1, 31, 0), freshSamples(32, collectRunEnd, 1))
	c2.sum.Starts = 2
	c2.sum.Exits = []reports.Exit{{T: 31.5, Code: 2, How: "exited with status 2"}}
	v.collect([]*client{c1, c2}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.InDelta(t, 6.5, metric(t, v, "clients.fresh_after_fault_s"), 1e-9)
	assert.Equal(t, 0.0, metric(t, v, "clients.oom_kills"))
	assert.Equal(t, 1.0, metric(t, v, "clients.deaths"))
}

func TestCollectRestartedClientStaleUntilLoaded(t *testing.T) {
	// A new incarnation knows no hot znode yet (NextSeq 1): it is stale
	// until it has loaded the tree.
	v := collectVariant(t, faultWindow())
	c := newClient("client-01", freshSamples(1, 20, 0),
		[]clientSample{csample(30, 1, 1), csample(31, 1, 1), csample(32, 1, 1)},
		freshSamples(33, collectRunEnd, 1))
	c.sum.Exits = []reports.Exit{{T: 20.5, How: "exited with status 1", Code: 1}}
	v.collect([]*client{c}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.InDelta(t, 7.0, metric(t, v, "clients.fresh_after_fault_s"), 1e-9)
	assert.InDelta(t, 31.9, metric(t, v, "clients.stale_s.max"), 1e-9)
}

func TestCollectSamplesEndEarlyNeverFresh(t *testing.T) {
	// No sample in the last 5 s of the run, no exit recorded either: the
	// client cannot be shown fresh at the end.
	v := collectVariant(t, faultWindow())
	v.collect([]*client{newClient("client-01", freshSamples(1, 39, 0))}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.True(t, math.IsInf(metric(t, v, "clients.fresh_after_fault_s"), 1))

	// Up to 5 s before the end is enough.
	v = collectVariant(t, faultWindow())
	v.collect([]*client{newClient("client-01", freshSamples(1, 40, 0))}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.Equal(t, 0.0, metric(t, v, "clients.fresh_after_fault_s"))

	// A client that never reported.
	v = collectVariant(t, faultWindow())
	v.collect([]*client{newClient("client-01", freshSamples(1, collectRunEnd, 0)), newClient("client-02")}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.True(t, math.IsInf(metric(t, v, "clients.fresh_after_fault_s"), 1))
}

func TestCollectStaleBeforeWarmupNotInMax(t *testing.T) {
	// Loading the tree during the warm-up is not a staleness that counts.
	v := collectVariant(t, faultWindow())
	c := newClient("client-01", []clientSample{csample(5, 0, 1), csample(9, 0, 1)}, freshSamples(10, collectRunEnd, 0))
	v.collect([]*client{c}, &serverSampler{}, collectWriter(t, 450).Log())
	assert.Equal(t, 0.0, metric(t, v, "clients.stale_s.max"))
	assert.InDelta(t, 8.9, values(series(t, v, "client.stale_s", "client-01"))[1], 1e-9, "the series still shows it")
	assert.Equal(t, 0.0, metric(t, v, "clients.fresh_after_fault_s"))
}

func TestCollectCumulativeCountersAcrossIncarnations(t *testing.T) {
	v := collectVariant(t, faultWindow())
	mk := func(t float64, inc int, reconnects, completed int64) clientSample {
		s := csample(t, inc, upTo(t))
		s.s.Reconnects, s.s.Completed = reconnects, completed
		return s
	}
	c := newClient("client-01", []clientSample{
		// Out of order: collect sorts by time.
		mk(3, 0, 3, 300), mk(1, 0, 1, 100), mk(2, 0, 2, 200),
		// Incarnation 1 counts from 0 again.
		mk(5, 1, 0, 0), mk(6, 1, 1, 50),
		// Incarnation 2 as well.
		mk(8, 2, 1, 10), mk(collectRunEnd, 2, 2, 20),
	})
	c.finals = []zkmirror.Sample{
		{Reconnects: 3, Completed: 300, Refreshes: 3},
		{Reconnects: 1, Completed: 50, Refreshes: 1},
		{Reconnects: 2, Completed: 20, Refreshes: 2},
	}
	c.sum.Exits = []reports.Exit{{T: 3.5}, {T: 7}}
	v.collect([]*client{c}, &serverSampler{}, collectWriter(t, 450).Log())

	rc := series(t, v, "client.reconnects", "client-01")
	assert.Equal(t, "reconnects", rc.Unit)
	assert.Equal(t, []float64{1, 2, 3, 5, 6, 8, collectRunEnd}, times(rc))
	assert.Equal(t, []float64{1, 2, 3, 3, 4, 5, 6}, values(rc))
	assert.Equal(t, []float64{100, 200, 300, 300, 350, 360, 370}, values(series(t, v, "client.completed", "client-01")))

	assert.Equal(t, 6.0, metric(t, v, "clients.reconnects.total"))
	assert.Equal(t, 370.0, metric(t, v, "clients.requests.total"))
	assert.Equal(t, 6.0, metric(t, v, "clients.refreshes.total"))
	assert.Equal(t, 2.0, metric(t, v, "clients.deaths"))
}

func TestCollectClientFiguresAndSeries(t *testing.T) {
	v := collectVariant(t, faultWindow())
	mk := func(t float64, inflight, queued, rss int64) clientSample {
		s := csample(t, 0, upTo(t))
		s.s.InFlight, s.s.Queued, s.s.RSSBytes = inflight, queued, rss
		return s
	}
	c1 := newClient("client-01", []clientSample{mk(1, 2, 0, 10<<20), mk(collectRunEnd, 500, 1200, 72<<20)})
	c2 := newClient("client-02", []clientSample{mk(2, 8, 1, 20<<20), mk(collectRunEnd, 8, 0, 21<<20+1<<19)})
	c1.events = []reports.Event{{T: 30, Kind: "client-start", Source: "client-01"}}
	c2.events = []reports.Event{{T: 1, Kind: "client-start", Source: "client-02"}}
	v.events = []reports.Event{{T: 10, Kind: "fault", Source: "zk1", Detail: "pause"}}
	srv := &serverSampler{samples: []serverSample{{t: 3, member: "zk3", outstanding: 1, ok: true}, {t: 12, member: "zk3", outstanding: 2, ok: true}}}
	v.collect([]*client{c1, c2}, srv, collectWriter(t, 450).Log())

	assert.Equal(t, 1700.0, metric(t, v, "clients.pending.max"))
	assert.Equal(t, 72.0, metric(t, v, "clients.rss_mb.max"))
	assert.Equal(t, []float64{20, 21.5}, values(series(t, v, "client.rss_mb", "client-02")))
	assert.Equal(t, "MiB", series(t, v, "client.rss_mb", "client-02").Unit)
	assert.Equal(t, []float64{2, 1700}, values(series(t, v, "client.pending", "client-01")))

	// Every series, sorted by name then source.
	var got [][2]string
	for _, s := range v.vr.Series {
		got = append(got, [2]string{s.Name, s.Source})
	}
	assert.Equal(t, [][2]string{
		{"client.completed", "client-01"}, {"client.completed", "client-02"},
		{"client.connected", "client-01"}, {"client.connected", "client-02"},
		{"client.pending", "client-01"}, {"client.pending", "client-02"},
		{"client.reconnects", "client-01"}, {"client.reconnects", "client-02"},
		{"client.rss_mb", "client-01"}, {"client.rss_mb", "client-02"},
		{"client.stale_s", "client-01"}, {"client.stale_s", "client-02"},
		{"server.avg_latency_ms", "zk3"},
		{"server.connections", "zk3"},
		{"server.outstanding_requests", "zk3"},
	}, got)

	// Events from the variant, the clients and the servers' states, by time.
	assert.True(t, slices.IsSortedFunc(v.vr.Events, func(a, b reports.Event) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	}))
	var kinds []string
	for _, e := range v.vr.Events {
		kinds = append(kinds, e.Kind+"@"+e.Source)
	}
	assert.Equal(t, []string{"client-start@client-02", "fault@zk1", "client-start@client-01"}, kinds)

	// Summaries of every client, in order.
	require.Len(t, v.vr.Clients, 2)
	assert.Equal(t, "client-01", v.vr.Clients[0].ID)
	assert.Equal(t, "client-02", v.vr.Clients[1].ID)

	// Every metric the hypotheses and the evidence of IL-0587 name is there.
	for _, h := range v.s.Hypotheses {
		_, ok := v.vr.Metrics[h.Metric]
		assert.True(t, ok, "hypothesis %s: metric %s not collected", h.ID, h.Metric)
	}
	for _, e := range v.s.Evidence {
		_, ok := v.vr.Metrics[e.Metric]
		assert.True(t, ok, "evidence metric %s not collected", e.Metric)
	}
}

// writerLog stands in for the writer: collect only needs its log.
type writerLog []zkmirror.Write

func (w writerLog) Log() []zkmirror.Write { return w }

// The scenario loader accepts the registered faults and no other.
func TestScenarioFaultsAreRegistered(t *testing.T) {
	src, err := scenarios.ReadBuiltin("il-0587-zk-treecache-reconnect-storm.yaml")
	require.NoError(t, err)
	with := func(name string) []byte {
		return []byte(strings.Replace(string(src), "fault: pause", "fault: "+name, 1))
	}
	for _, name := range faults.Names() {
		if name == "add-capacity" || name == "restart-fleet" {
			continue // fleet faults: checked on the IL-0384 scenario below
		}
		_, err := scenarios.Parse("x.yaml", with(name))
		require.NoError(t, err, name)
	}
	fleetSrc, err := scenarios.ReadBuiltin("il-0384-kinesis-thread-per-peer.yaml")
	require.NoError(t, err)
	_, err = scenarios.Parse("y.yaml", fleetSrc)
	require.NoError(t, err)
	_, err = scenarios.Parse("y.yaml", []byte(strings.Replace(string(fleetSrc), "fault: restart-fleet", "fault: pause", 1)))
	require.ErrorContains(t, err, "want leader, follower or any")
	_, err = scenarios.Parse("x.yaml", with("meteor"))
	require.ErrorContains(t, err, `unknown fault "meteor"`)
}
