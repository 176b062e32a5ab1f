package zkmirror

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// The synthetic run: the variant's clock starts at collectT0; the warm-up
// ends at 10 s, the fault lasts from 10 s to 25 s and the run ends at 45 s.
// The writer acknowledges write s at s*100ms up to the end of the run. A
// mirror is fresh within 3 s.
var collectT0 = time.Date(2019, 1, 18, 9, 9, 0, 0, time.UTC)

const collectRunEnd = 45.0

var collectTimeline = lab.Timeline{WarmEnd: 10, Faults: []lab.FaultWindow{{Fault: "pause", Start: 10, End: 25}}, End: collectRunEnd}

// fakeGroup stands in for the clients' supervisor.
type fakeGroup struct{ sums []lab.Instance }

func (g *fakeGroup) Len() int                   { return len(g.sums) }
func (g *fakeGroup) ID(i int) string            { return g.sums[i].ID }
func (g *fakeGroup) Alive(int) bool             { return true }
func (g *fakeGroup) Proc(int) lab.Proc          { return nil }
func (g *fakeGroup) Stop()                      {}
func (g *fakeGroup) Requests() []float64        { return nil }
func (g *fakeGroup) Latest() (float64, float64) { return 0, 0 }
func (g *fakeGroup) Connections() []float64     { return nil }
func (g *fakeGroup) Record(*lab.Result)         {}
func (g *fakeGroup) SetMemoryLimit(r *lab.Result, mb int) {
	(*instances.Group)(nil).SetMemoryLimit(r, mb)
}
func (g *fakeGroup) Summary(i int, edit func(*lab.Instance)) lab.Instance {
	if edit != nil {
		edit(&g.sums[i])
	}
	return g.sums[i]
}

// client is one synthetic client's samples, exits and finals.
type client struct {
	samples []sample
	exits   []lab.Exit
	ooms    int
	finals  []Sample
}

func collectWorkload(fresh time.Duration, cs ...client) *workload {
	s := NewSettings()
	s.Clients, s.FreshWithin = len(cs), lab.Duration(fresh)
	log := make([]Write, int(collectRunEnd*10))
	for i := range log {
		log[i] = Write{Seq: int64(i + 1), Path: "/hot", At: collectT0.Add(time.Duration(i+1) * 100 * time.Millisecond)}
	}
	g := &fakeGroup{}
	w := &workload{s: s, group: g, wlog: func() []Write { return log }, last: map[[2]int]Sample{}}
	for i, c := range cs {
		id := "client-" + string(rune('1'+i))
		g.sums = append(g.sums, lab.Instance{ID: id, Exits: c.exits, OOMKills: c.ooms, Starts: 1 + len(c.exits)})
		w.samples = append(w.samples, c.samples)
		w.finals = append(w.finals, c.finals)
	}
	return w
}

// upTo is the NextSeq of a mirror that has applied every write acknowledged
// by run time u: its staleness at t is t - (u + 0.1 s).
func upTo(u float64) int64 { return int64(math.Round(u*10)) + 1 }

func csample(t float64, inc int, next int64) sample {
	ms := collectT0.Add(time.Duration(t * float64(time.Second))).UnixMilli()
	return sample{t: t, inc: inc, s: Sample{UnixMS: ms, NextSeq: next, HotKnown: 1}, seq: true}
}

func freshSamples(from, to float64, inc int) []sample {
	var out []sample
	for t := from; t <= to; t++ {
		out = append(out, csample(t, inc, upTo(t)))
	}
	return out
}

func frozenSamples(from, to, u float64, inc int) []sample {
	var out []sample
	for t := from; t <= to; t++ {
		out = append(out, csample(t, inc, upTo(u)))
	}
	return out
}

func join(parts ...[]sample) []sample {
	var out []sample
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// stale is fresh except while frozen at u between from and to.
func stale(from, to, u float64) client {
	return client{samples: join(freshSamples(1, from-1, 0), frozenSamples(from, to, u, 0), freshSamples(to+1, collectRunEnd, 0))}
}

func collect(t *testing.T, w *workload) *lab.Result {
	t.Helper()
	r := &lab.Result{}
	w.Collect(r, collectTimeline)
	// The declared reducers, as the runner computes them.
	for _, m := range (kind{}).Metrics() {
		if m.Reducer != nil {
			if x, ok := m.Reducer.Apply(r.Series, collectTimeline); ok {
				r.SetMetric(m.Name, x)
			}
		}
	}
	return r
}

func metric(t *testing.T, r *lab.Result, name string) float64 {
	t.Helper()
	x, ok := r.Metrics[name]
	require.True(t, ok, "metric %s missing; have %v", name, r.Metrics)
	return float64(x)
}

func TestCollectFreshAfterFault(t *testing.T) {
	// client-1 misses writes from 11 s: stale (> 3 s) from 15 s to 28 s;
	// client-2 from 20 s: stale from 24 s to 30 s.
	r := collect(t, collectWorkload(3*time.Second, stale(12, 28, 11), stale(21, 30, 20)))
	// The last stale moment of any client (30 s) minus the end of the fault.
	assert.InDelta(t, 5.0, metric(t, r, "clients.fresh_after_fault_s"), 1e-9)
	// The worst staleness after the warm-up: client-1 at 28 s.
	assert.InDelta(t, 16.9, metric(t, r, "clients.stale_s.max"), 1e-9)
	assert.Equal(t, 0.0, metric(t, r, "clients.deaths"))
	st := r.SeriesFor("client.stale_s", "client-1", "s")
	require.Len(t, st.Points, 45)
	assert.Equal(t, 0.0, float64(st.Points[10].V), "fresh at 11 s")
	assert.InDelta(t, 2.9, float64(st.Points[13].V), 1e-9, "14 s: behind but within 3 s")
	assert.InDelta(t, 16.9, float64(st.Points[27].V), 1e-9, "28 s")
}

func TestCollectFreshWithin(t *testing.T) {
	// Frozen at 26 s from 27 s: 0.9, 1.9, 2.9, 3.9 s behind; whether that is
	// stale depends on fresh_within.
	for _, c := range []struct {
		fresh time.Duration
		to    float64
		want  float64
	}{
		{3 * time.Second, 30, 5}, {3 * time.Second, 29, 0}, {2500 * time.Millisecond, 29, 4}, {4 * time.Second, 30, 0},
	} {
		r := collect(t, collectWorkload(c.fresh, stale(27, c.to, 26)))
		assert.InDelta(t, c.want, metric(t, r, "clients.fresh_after_fault_s"), 1e-9, "fresh within %s, frozen until %v", c.fresh, c.to)
	}
}

func TestCollectNeverFresh(t *testing.T) {
	// Still stale at the last sample.
	r := collect(t, collectWorkload(3*time.Second, stale(12, 28, 11), client{samples: join(freshSamples(1, 40, 0), frozenSamples(41, collectRunEnd, 40, 0))}))
	assert.True(t, math.IsInf(metric(t, r, "clients.fresh_after_fault_s"), 1))
	// Died after its last sample.
	dead := client{samples: freshSamples(1, 44, 0), exits: []lab.Exit{{T: 44.5, OOM: true, How: "killed by the kernel OOM killer"}}, ooms: 1}
	r = collect(t, collectWorkload(3*time.Second, stale(12, 28, 11), dead))
	assert.True(t, math.IsInf(metric(t, r, "clients.fresh_after_fault_s"), 1))
	assert.Equal(t, 1.0, metric(t, r, "clients.oom_kills"))
	assert.Equal(t, 1.0, metric(t, r, "clients.deaths"))
	// No sample in the last 5 s of the run.
	r = collect(t, collectWorkload(3*time.Second, client{samples: freshSamples(1, 39, 0)}))
	assert.True(t, math.IsInf(metric(t, r, "clients.fresh_after_fault_s"), 1))
	r = collect(t, collectWorkload(3*time.Second, client{samples: freshSamples(1, 40, 0)}))
	assert.Equal(t, 0.0, metric(t, r, "clients.fresh_after_fault_s"), "up to 5 s before the end is enough")
	// A client that never reported.
	r = collect(t, collectWorkload(3*time.Second, client{samples: freshSamples(1, collectRunEnd, 0)}, client{}))
	assert.True(t, math.IsInf(metric(t, r, "clients.fresh_after_fault_s"), 1))
}

func TestCollectDeathIsAStaleMoment(t *testing.T) {
	// client-2 dies at 31.5 s, its next incarnation is fresh at once: it was
	// last stale when it died.
	died := client{samples: join(freshSamples(1, 31, 0), freshSamples(32, collectRunEnd, 1)), exits: []lab.Exit{{T: 31.5, Code: 2}}}
	r := collect(t, collectWorkload(3*time.Second, stale(12, 28, 11), died))
	assert.InDelta(t, 6.5, metric(t, r, "clients.fresh_after_fault_s"), 1e-9)
	assert.Equal(t, 1.0, metric(t, r, "clients.deaths"))
}

func TestCollectStaleBeforeWarmupNotInMax(t *testing.T) {
	// Loading the tree during the warm-up is not a staleness that counts.
	c := client{samples: join([]sample{csample(5, 0, 1), csample(9, 0, 1)}, freshSamples(10, collectRunEnd, 0))}
	r := collect(t, collectWorkload(3*time.Second, c))
	assert.Equal(t, 0.0, metric(t, r, "clients.stale_s.max"))
	assert.InDelta(t, 8.9, float64(r.SeriesFor("client.stale_s", "client-1", "s").Points[1].V), 1e-9, "the series still shows it")
}

func TestCollectCountersAcrossIncarnations(t *testing.T) {
	mk := func(t float64, inc int, reconnects, completed int64) sample {
		s := csample(t, inc, upTo(t))
		s.s.Reconnects, s.s.Completed = reconnects, completed
		return s
	}
	c := client{
		// Out of order: collect sorts by time; each incarnation counts from 0.
		samples: []sample{mk(3, 0, 3, 300), mk(1, 0, 1, 100), mk(2, 0, 2, 200), mk(5, 1, 0, 0), mk(6, 1, 1, 50), mk(8, 2, 1, 10), mk(collectRunEnd, 2, 2, 20)},
		finals:  []Sample{{Reconnects: 3, Completed: 300, Refreshes: 3}, {Reconnects: 1, Completed: 50, Refreshes: 1}, {Reconnects: 2, Completed: 20, Refreshes: 2}},
		exits:   []lab.Exit{{T: 3.5}, {T: 7}},
	}
	r := collect(t, collectWorkload(3*time.Second, c))
	rc := r.SeriesFor("client.reconnects", "client-1", "reconnects")
	var vals []float64
	for _, p := range rc.Points {
		vals = append(vals, float64(p.V))
	}
	assert.Equal(t, []float64{1, 2, 3, 3, 4, 5, 6}, vals)
	assert.Equal(t, 6.0, metric(t, r, "clients.reconnects.total"))
	assert.Equal(t, 370.0, metric(t, r, "clients.requests.total"))
	assert.Equal(t, 6.0, metric(t, r, "clients.refreshes.total"))
	assert.Equal(t, int64(370), r.Clients[0].Requests)
}

func TestCollectPendingAndRSS(t *testing.T) {
	mk := func(t float64, inflight, queued, rss int64) sample {
		s := csample(t, 0, upTo(t))
		s.s.InFlight, s.s.Queued, s.s.RSSBytes = inflight, queued, rss
		return s
	}
	// The initial load (3,000 pending at 2 s) is before the fault; from the
	// fault on, client-2's 40 is the peak.
	c1 := client{samples: []sample{mk(2, 2000, 1000, 10<<20), mk(12, 8, 3, 72<<20), mk(collectRunEnd, 0, 0, 30<<20)}}
	c2 := client{samples: []sample{mk(9, 900, 0, 20<<20), mk(20, 8, 32, 21<<20), mk(collectRunEnd, 1, 0, 21<<20)}}
	w := collectWorkload(3*time.Second, c1, c2)
	w.s.MemoryLimitMB = 72
	r := collect(t, w)
	assert.Equal(t, 3000.0, metric(t, r, "clients.pending.max"))
	assert.Equal(t, 40.0, metric(t, r, "clients.pending.max_from_fault"))
	assert.Equal(t, 72.0, metric(t, r, "clients.rss_mb.max"))
	assert.Equal(t, 72.0, r.Clients[0].PeakRSSMB)
	assert.Equal(t, lab.Limit{Value: 72, Label: "memory limit 72 MiB"}, r.Limits[instances.SeriesMemory])
}

// A client that does not say how far its mirror got (a user's client that
// prints nothing) is not judged on freshness: the metric is missing, not
// "never".
func TestCollectFreshnessNotReported(t *testing.T) {
	quiet := client{samples: nil}
	r := collect(t, collectWorkload(3*time.Second, quiet, quiet))
	_, ok := r.Metrics["clients.fresh_after_fault_s"]
	assert.False(t, ok)
	assert.Empty(t, r.Named("client.stale_s"))
}

// The servers' view: requests per znode per connection opened from the
// first fault on.
func TestRequestsPerZnode(t *testing.T) {
	r := &lab.Result{}
	// A full refresh: 2 reads per znode of 100 on each of 2 reconnects.
	for _, p := range [][2]float64{{5, 200}, {9, 200}, {15, 400}, {30, 600}} {
		r.Add(instances.SeriesRequests, "client-01", "requests", p[0], p[1])
	}
	for _, p := range [][2]float64{{5, 1}, {15, 2}, {30, 3}} {
		r.Add(instances.SeriesConnections, "client-01", "connections", p[0], p[1])
	}
	assert.InDelta(t, 2.0, requestsPerZnode(r, collectTimeline, 100), 1e-9)
	assert.True(t, math.IsNaN(requestsPerZnode(&lab.Result{}, collectTimeline, 100)), "no servers' view")
}

// Steady watch traffic (10 requests a second before the fault and after)
// is not counted: only the refresh on top of it. The steady rate is the
// lowest over 5 s before the fault, so a walk finishing early in the
// warm-up is not taken for steady traffic.
func TestRequestsPerZnodeBeyondSteady(t *testing.T) {
	r := &lab.Result{}
	for s := 0; s <= 30; s++ {
		v := 10 * float64(s)
		if s <= 3 {
			v = 100 * float64(s) // the first walk
		} else {
			v += 270
		}
		if s >= 15 {
			v += 200 // one refresh of 100 znodes
		}
		r.Add(instances.SeriesRequests, "client-01", "requests", float64(s), v)
	}
	r.Add(instances.SeriesConnections, "client-01", "connections", 0, 1)
	r.Add(instances.SeriesConnections, "client-01", "connections", 15, 2)
	assert.InDelta(t, 2.0, requestsPerZnode(r, collectTimeline, 100), 1e-9)
	// A client that stopped sending (dead, or no writes to watch) takes
	// nothing away from another's refresh.
	for s := 0; s <= 30; s++ {
		v := 10 * float64(min(s, 12))
		r.Add(instances.SeriesRequests, "client-02", "requests", float64(s), v)
	}
	assert.InDelta(t, 2.0, requestsPerZnode(r, collectTimeline, 100), 1e-9)
}

// A silent client is loaded once the servers have counted two requests a
// znode from it (one a znode is a TreeCache half-way through its walk),
// and only steadyWindow later, so that the steady rate measured before the
// fault is clear of its walk.
func TestSilentLoadedAfterTwoReadsAZnodeAndAWindow(t *testing.T) {
	w := &workload{tree: Tree{Root: "/t", Fanout: []int{10, 10}}, loadedAt: map[int]time.Time{}}
	n := float64(w.tree.Nodes())
	t0 := time.Unix(1000, 0)
	require.False(t, w.silentLoaded(0, n, t0), "one request a znode: half-way")
	require.False(t, w.silentLoaded(0, 2*n, t0.Add(time.Second)), "loaded now: not yet a window after")
	require.False(t, w.silentLoaded(0, 2*n+40, t0.Add(5900*time.Millisecond)))
	require.True(t, w.silentLoaded(0, 2*n+50, t0.Add(6*time.Second)), "a window after the load")
	require.False(t, w.silentLoaded(1, 2*n, t0.Add(6*time.Second)), "each client by itself")
}

func TestStaleAtEndSaysWhy(t *testing.T) {
	cs := []sample{{t: 10}, {t: 50}}
	require.Equal(t, "", staleAtEnd(cs, false, 52))
	require.Equal(t, "it reported nothing", staleAtEnd(nil, false, 52))
	require.Equal(t, "its last sample, at 50.0 s, was stale", staleAtEnd(cs, true, 52))
	require.Equal(t, "its last sample came at 50.0 s, 10.0 s before the run's end", staleAtEnd(cs, false, 60))
}
