package lab

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chaoslab/chaoslab/record"
)

// SeriesDef is record.SeriesDef.
type SeriesDef = record.SeriesDef

// MetricDef declares a metric. A metric with a Reducer is data: the runner
// computes it from its series; one without is computed by the plug-in's
// Collect.
type MetricDef struct {
	Name string
	Unit string
	Doc  string
	*Reducer
	// ServerView: counted per client from the servers' list of their
	// client connections, which only a ConnLister system gives.
	ServerView bool
}

// Reducer reduces a series over a window of the timeline to one figure.
type Reducer struct {
	Series string `yaml:"series" json:"series"`
	// Reduce is max, min, mean, last, rate, jump, time_above,
	// time_below or recover_below.
	Reduce string `yaml:"reduce" json:"reduce"`
	// Bound is the threshold of time_above, time_below and recover_below.
	Bound float64 `yaml:"bound,omitempty" json:"bound,omitempty"`
	// Window is all (default), after-warmup, before-fault, from-fault,
	// during-faults or after-faults.
	Window string `yaml:"window,omitempty" json:"window,omitempty"`
}

// Reduces and Windows are the names a Reducer takes.
var (
	Reduces = []string{"max", "min", "mean", "last", "rate", "total_rate", "jump", "time_above", "time_below", "recover_below"}
	Windows = []string{"all", "after-warmup", "before-fault", "from-fault", "during-faults", "after-faults"}
)

// Name is the reducer's canonical metric name, e.g.
// "max(server.outstanding_requests)@from-fault".
func (r Reducer) Name() string {
	arg := r.Series
	if r.bounded() {
		arg += fmt.Sprintf(", %g", r.Bound)
	}
	n := r.Reduce + "(" + arg + ")"
	if r.Window != "" && r.Window != "all" {
		n += "@" + r.Window
	}
	return n
}

func (r Reducer) bounded() bool {
	return r.Reduce == "time_above" || r.Reduce == "time_below" || r.Reduce == "recover_below"
}

// Check says what is wrong with a reducer's names.
func (r Reducer) Check() []Problem {
	var c Checks
	c.Need(r.Series != "", "series", "required")
	c.Need(slices.Contains(Reduces, r.Reduce), "reduce", "want one of %s, got %q", strings.Join(Reduces, ", "), r.Reduce)
	c.Need(r.Window == "" || slices.Contains(Windows, r.Window), "window", "want one of %s, got %q", strings.Join(Windows, ", "), r.Window)
	return c
}

// Timeline is what the reducers' windows are cut from.
type Timeline struct {
	// WarmEnd is when the warm-up ended (0: it did not).
	WarmEnd float64
	Faults  []FaultWindow
	// End is the end of the observation.
	End float64
}

// FaultStart is the start of the first fault (NaN when none ran).
func (t Timeline) FaultStart() float64 {
	v := math.NaN()
	for _, f := range t.Faults {
		if math.IsNaN(v) || f.Start < v {
			v = f.Start
		}
	}
	return v
}

// FaultEnd is the end of the last fault (NaN when none ran).
func (t Timeline) FaultEnd() float64 {
	v := math.NaN()
	for _, f := range t.Faults {
		if math.IsNaN(v) || f.End > v {
			v = f.End
		}
	}
	return v
}

// Fault is the first window of the named fault.
func (t Timeline) Fault(name string) *FaultWindow {
	for i := range t.Faults {
		if t.Faults[i].Fault == name {
			return &t.Faults[i]
		}
	}
	return nil
}

// span is a window's [from, to]; ok is false when it does not exist in
// this run (no fault ran).
func (t Timeline) span(window string) (from, to float64, ok bool) {
	end := t.End
	if end <= 0 {
		end = math.Inf(1)
	}
	switch window {
	case "", "all":
		return math.Inf(-1), end, true
	case "after-warmup":
		return t.WarmEnd, end, true
	case "before-fault":
		s := t.FaultStart()
		return t.WarmEnd, s, !math.IsNaN(s)
	case "from-fault":
		s := t.FaultStart()
		return s, end, !math.IsNaN(s)
	case "during-faults":
		s, e := t.FaultStart(), t.FaultEnd()
		return s, e, !math.IsNaN(s)
	case "after-faults":
		e := t.FaultEnd()
		return e, end, !math.IsNaN(e)
	}
	return 0, 0, false
}

// Apply reduces the named series of every source over the window: max,
// min and mean pool every point; the others are taken per source and the
// largest wins (the last source to recover, the longest above). ok is
// false when nothing was measured.
func (r Reducer) Apply(series []*Series, tl Timeline) (float64, bool) {
	from, to, ok := tl.span(r.Window)
	if !ok {
		return math.NaN(), false
	}
	switch r.Reduce {
	case "jump":
		return jump(series, r.Series, tl, from, to)
	case "total_rate":
		return pooledRate(series, r.Series, from, to)
	}
	best, sum, n := math.NaN(), 0.0, 0
	for _, s := range series {
		if s.Name != r.Series {
			continue
		}
		pts := window(s.Points, from, to)
		var v float64
		var got bool
		switch r.Reduce {
		case "max", "min", "mean":
			for _, p := range pts {
				x := float64(p.V)
				if math.IsNaN(x) {
					continue
				}
				sum, n = sum+x, n+1
				if math.IsNaN(best) || (r.Reduce == "max" && x > best) || (r.Reduce == "min" && x < best) {
					best = x
				}
			}
			continue
		case "last":
			v, got = last(pts)
		case "rate":
			v, got = rate(pts)
		case "time_above":
			v, got = timeWhere(pts, to, func(x float64) bool { return x > r.Bound })
		case "time_below":
			v, got = timeWhere(pts, to, func(x float64) bool { return x < r.Bound })
		case "recover_below":
			v, got = recoverBelow(pts, from, r.Bound)
		}
		if got && (math.IsNaN(best) || v > best) {
			best = v
		}
	}
	if r.Reduce == "mean" {
		if n == 0 {
			return math.NaN(), false
		}
		return sum / float64(n), true
	}
	return best, !math.IsNaN(best)
}

func window(pts []Point, from, to float64) []Point {
	var out []Point
	for _, p := range pts {
		if p.T >= from && p.T <= to {
			out = append(out, p)
		}
	}
	return out
}

// rate is how fast a cumulative series grew over the window, per second:
// its rise (increase) from the first point to the last over the time
// between them.
func rate(pts []Point) (float64, bool) {
	rise, t0, t1, ok := increase(pts)
	if !ok || t1 <= t0 {
		return 0, false
	}
	return rise / (t1 - t0), true
}

// increase is how much a cumulative series rose over pts, and the times
// of its first and last points (NaN points skipped). A fall is a counter
// that started again from 0 (a restarted server's, or one a new leader
// term resets): the value after it is all new growth, as Prometheus's
// increase() counts it.
func increase(pts []Point) (rise, t0, t1 float64, ok bool) {
	prev := math.NaN()
	for _, p := range pts {
		x := float64(p.V)
		if math.IsNaN(x) {
			continue
		}
		switch {
		case !ok:
			t0, ok = p.T, true
		case x >= prev:
			rise += x - prev
		default:
			rise += x
		}
		prev, t1 = x, p.T
	}
	return rise, t0, t1, ok
}

// jump is how many times faster a cumulative series grew in the window
// than before the first fault, every source together (the servers'
// requests after a trigger against before it).
func jump(series []*Series, name string, tl Timeline, from, to float64) (float64, bool) {
	bfrom, bto, ok := tl.span("before-fault")
	if !ok {
		return math.NaN(), false
	}
	after, ok1 := pooledRate(series, name, from, to)
	before, ok2 := pooledRate(series, name, bfrom, bto)
	if !ok1 || !ok2 || before <= 0 {
		return math.NaN(), false
	}
	return after / before, true
}

// pooledRate is the sources' total growth over [from, to] per second of
// the time their points span.
func pooledRate(series []*Series, name string, from, to float64) (float64, bool) {
	rise, t0, t1 := 0.0, math.Inf(1), math.Inf(-1)
	for _, s := range series {
		if s.Name != name {
			continue
		}
		r, first, end, ok := increase(window(s.Points, from, to))
		if !ok {
			continue
		}
		rise += r
		t0, t1 = min(t0, first), max(t1, end)
	}
	if t1 <= t0 {
		return 0, false
	}
	return rise / (t1 - t0), true
}

func last(pts []Point) (float64, bool) {
	for i := len(pts) - 1; i >= 0; i-- {
		if x := float64(pts[i].V); !math.IsNaN(x) {
			return x, true
		}
	}
	return 0, false
}

// timeWhere is the time the series spent where cond holds: each point
// stands until the next one (the last until to); gaps count as not.
func timeWhere(pts []Point, to float64, cond func(float64) bool) (float64, bool) {
	if len(pts) == 0 {
		return 0, false
	}
	total := 0.0
	for i, p := range pts {
		next := to
		if i+1 < len(pts) {
			next = pts[i+1].T
		}
		if x := float64(p.V); !math.IsNaN(x) && cond(x) && !math.IsInf(next, 1) {
			total += next - p.T
		}
	}
	return total, true
}

// recoverBelow is the time from `from` until the series is below bound
// for good: +Inf when its last point is not.
func recoverBelow(pts []Point, from, bound float64) (float64, bool) {
	if len(pts) == 0 {
		return 0, false
	}
	lastBad := math.Inf(-1)
	for _, p := range pts {
		if x := float64(p.V); math.IsNaN(x) || x >= bound {
			lastBad = p.T
		}
	}
	switch {
	case lastBad == pts[len(pts)-1].T:
		return math.Inf(1), true
	case math.IsInf(lastBad, -1):
		return 0, true
	}
	if math.IsInf(from, -1) {
		return lastBad, true
	}
	return math.Max(0, lastBad-from), true
}

// ParseReducer reads a reducer written as a metric name:
// REDUCE(SERIES[, BOUND])[@WINDOW], e.g. "max(client.pending)@from-fault"
// or "time_above(server.outstanding_requests, 150)". isExpr is false when
// the name is not written that way at all.
func ParseReducer(s string) (r Reducer, isExpr bool, err error) {
	open := strings.IndexByte(s, '(')
	end := strings.LastIndexByte(s, ')')
	if open <= 0 || end < open {
		return r, false, nil
	}
	r.Reduce = s[:open]
	args, rest := s[open+1:end], s[end+1:]
	if w, ok := strings.CutPrefix(rest, "@"); ok {
		r.Window = w
		if w == "all" {
			r.Window = "" // the default, written or not
		}
	} else if rest != "" {
		return r, true, fmt.Errorf("%s: want @WINDOW after the parenthesis, got %q", s, rest)
	}
	series, bound, hasBound := strings.Cut(args, ",")
	r.Series = strings.TrimSpace(series)
	if hasBound {
		if _, err := fmt.Sscanf(strings.TrimSpace(bound), "%g", &r.Bound); err != nil {
			return r, true, fmt.Errorf("%s: bound %q is not a number", s, strings.TrimSpace(bound))
		}
	}
	if ps := r.Check(); len(ps) > 0 {
		return r, true, fmt.Errorf("%s: %s %s", s, ps[0].Field, ps[0].Msg)
	}
	if r.bounded() != hasBound {
		return r, true, fmt.Errorf("%s: %s takes a bound exactly when its name has one (time_above, time_below, recover_below)", s, r.Reduce)
	}
	return r, true, nil
}

// The pipeline's own series and metrics, for every scenario: the
// cluster's leader as the sampler sees it, and its health around faults.
const (
	SeriesLeader = "cluster.leader"
	SeriesQuorum = "cluster.quorum"
)

// PipelineSeries are the series the runner records for every system.
func PipelineSeries() []SeriesDef {
	return []SeriesDef{
		{Name: SeriesLeader, Title: "A leader answers (1) or none does (0), per sample of the servers", Unit: "0/1"},
		{Name: SeriesQuorum, Title: "A majority of the voting members serve (1: they answer as leader or follower) or not (0), per sample of the servers", Unit: "0/1"},
	}
}

// SeriesServerRequests is each member's requests received from clients,
// cumulative, on a system that counts them: rate() and jump() of it are
// the servers' request rate and its jump after a trigger.
const SeriesServerRequests = "server.requests"

// PipelineMetrics are the metrics the runner derives for every system.
func PipelineMetrics() []MetricDef {
	return []MetricDef{
		{Name: "cluster.leaderless_s", Unit: "s", Doc: "time no member answered as leader, over the run (the servers' own answers, every sample)",
			Reducer: &Reducer{Series: SeriesLeader, Reduce: "time_below", Bound: 1}},
		{Name: "cluster.quorum_lost_s", Unit: "s", Doc: "time fewer than a majority of the voting members served, over the run: a member that syncs its data, is in an election, or is down does not serve (the servers' own answers, every sample; voters are the members seen leading or following)",
			Reducer: &Reducer{Series: SeriesQuorum, Reduce: "time_below", Bound: 1}},
		{Name: "cluster.health_failures", Unit: "checks", Doc: "health checks around the faults (before each, after each) that did not find the cluster healthy in time"},
		{Name: "cluster.healthy_after_fault_s", Unit: "s", Doc: "seconds from the end of the last fault until the cluster was healthy again (+Inf when not within the check's deadline)"},
	}
}

// Describe says what the reducer measures, in a sentence.
func (r Reducer) Describe() string {
	what := map[string]string{
		"max": "highest value", "min": "lowest value", "mean": "mean value", "last": "last value (the largest over sources)",
		"rate":          "growth per second (the fastest source)",
		"total_rate":    "growth per second, every source together (a whole ensemble's request rate)",
		"jump":          "how many times faster it grew than in the before-fault window (every source together)",
		"time_above":    fmt.Sprintf("seconds above %g (the longest of any source)", r.Bound),
		"time_below":    fmt.Sprintf("seconds below %g (the longest of any source)", r.Bound),
		"recover_below": fmt.Sprintf("seconds from the window's start until below %g for good (the last source to get there; +Inf when one never does)", r.Bound),
	}[r.Reduce]
	window := map[string]string{
		"": "over the run", "all": "over the run", "after-warmup": "after the warm-up", "before-fault": "from the end of the warm-up to the start of the first fault",
		"from-fault":    "from the start of the first fault on",
		"during-faults": "from the start of the first fault to the end of the last", "after-faults": "after the last fault ended",
	}[r.Window]
	if r.Reduce == "rate" || r.Reduce == "total_rate" || r.Reduce == "jump" {
		// A cumulative series: a fall is a counter that started again.
		return fmt.Sprintf("%s of the cumulative %s, %s (a fall counts as a restart from 0)", what, r.Series, window)
	}
	return fmt.Sprintf("%s of %s, %s", what, r.Series, window)
}
