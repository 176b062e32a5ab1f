// Package record holds the record of a run: what the plug-ins measured
// (series, events, metrics, instances, fault windows) and the report that
// keeps it with what it was judged by. It depends on nothing of the
// harness, so that judging and rendering a record need none of it.
package record

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/verdict"
)

// FaultWindow is one fault injection, in seconds on the variant's clock.
type FaultWindow struct {
	Fault  string  `json:"fault"`
	Target string  `json:"target"` // the selector asked for
	Member string  `json:"member"` // what it hit, e.g. zk2 (several: zk1,zk3)
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	Detail string  `json:"detail,omitempty"`
	// Params are the fault's parameters as the scenario gave them.
	Params map[string]any `json:"params,omitempty"`
	// Proofs are what was read back, per target, to show that the fault
	// took effect (none: the fault reads nothing back).
	Proofs []Proof `json:"proofs,omitempty"`
}

// Proof is what one fault showed of one target: a state, a limit or a
// counter read back from the kernel, the engine or the system, not the
// lab's intent.
type Proof struct {
	Target string  `json:"target"`
	T      float64 `json:"t"`
	// Landed is Landed, Missed or Unverified.
	Landed   string `json:"landed"`
	Observed string `json:"observed"`
}

// What a proof says of the fault.
const (
	// Landed: what was read back shows the fault took effect.
	Landed = "landed"
	// Missed: what was read back shows it did not (the target had
	// already exited, the limit read back is not the one set): the
	// variant is inconclusive.
	Missed = "missed"
	// Unverified: the target has nothing to read back.
	Unverified = "unverified"
)

// ActionPrefix starts the Detail of a fault window that a person's action
// opened (a game day's facilitator, a trainee), not the scenario.
const ActionPrefix = "action by "

// IsAction says whether a person's action opened the window.
func (f FaultWindow) IsAction() bool { return strings.HasPrefix(f.Detail, ActionPrefix) }

// Missed lists, in words, each target the fault did not land on.
func (f FaultWindow) Missed() []string {
	var out []string
	for _, p := range f.Proofs {
		if p.Landed == Missed {
			out = append(out, fmt.Sprintf("%s did not land on %s at %.1f s: %s", f.Fault, p.Target, p.T, p.Observed))
		}
	}
	return out
}

// Event is a point on the run's timeline.
type Event struct {
	T      float64 `json:"t"`
	Kind   string  `json:"kind"` // client-exit, oom-kill, client-start, health, state, fault, note...
	Source string  `json:"source"`
	Detail string  `json:"detail"`
}

// Series is one sampled measurement of one source, e.g. the outstanding
// requests of server zk1.
type Series struct {
	Name   string  `json:"name"`   // e.g. server.outstanding_requests, client.rss_mb
	Source string  `json:"source"` // e.g. zk1, client-03
	Unit   string  `json:"unit"`
	Points []Point `json:"points"`
}

// Point is one sample: T seconds from the variant's start. A NaN value is
// a gap (the source did not answer).
type Point struct {
	T float64       `json:"t"`
	V verdict.Float `json:"v"`
}

// Pt is a Point from plain numbers.
func Pt(t, v float64) Point { return Point{T: t, V: verdict.Float(v)} }

// Instance is the life of one program a workload ran (a client, a
// front-end server): its starts, exits and headline figures.
type Instance struct {
	ID        string  `json:"id"`
	Starts    int     `json:"starts"`
	Exits     []Exit  `json:"exits,omitempty"`
	OOMKills  int     `json:"oom_kills"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Requests  int64   `json:"requests"`
	Reconnect int64   `json:"reconnects"`
	// Log is the instance's log, relative to the report's folder.
	Log string `json:"log"`
}

// Exit is how one incarnation of a program ended.
type Exit struct {
	T      float64 `json:"t"`
	Code   int     `json:"code"`
	Signal string  `json:"signal,omitempty"`
	OOM    bool    `json:"oom"`
	How    string  `json:"how"` // e.g. "killed by the kernel OOM killer (cgroup oom_kill 1)"
}

// Limit is a bound drawn across a series' chart (a memory limit, a thread
// limit), as it was enforced in this variant.
type Limit struct {
	Value float64 `json:"value"`
	Label string  `json:"label"`
}

// Fact is one line of a variant's settings as a person reads them.
type Fact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Result is what a variant collected: the part of its report that the
// plug-ins fill in.
type Result struct {
	// Events are point events (exits, OOM kills, health checks, state
	// changes), in seconds from the variant's start.
	Events []Event `json:"events"`
	// Series are the sampled measurements, on the same clock.
	Series []*Series `json:"series"`
	// Metrics are the figures derived from the series, by metric name.
	Metrics map[string]verdict.Float `json:"metrics"`
	// Clients are the workload's instances (clients, front-end servers).
	Clients []Instance `json:"clients"`
	// Limits are drawn across the charts of the named series.
	Limits map[string]Limit `json:"limits,omitempty"`
}

// SeriesFor returns the named series of a source, creating it when absent.
func (r *Result) SeriesFor(name, source, unit string) *Series {
	for _, s := range r.Series {
		if s.Name == name && s.Source == source {
			return s
		}
	}
	s := &Series{Name: name, Source: source, Unit: unit}
	r.Series = append(r.Series, s)
	return s
}

// Add appends a point to the named series of a source.
func (r *Result) Add(name, source, unit string, t, v float64) {
	s := r.SeriesFor(name, source, unit)
	s.Points = append(s.Points, Pt(t, v))
}

// SetMetric records a figure; a NaN (not measured) is left out.
func (r *Result) SetMetric(name string, v float64) {
	if math.IsNaN(v) {
		return
	}
	if r.Metrics == nil {
		r.Metrics = map[string]verdict.Float{}
	}
	r.Metrics[name] = verdict.Float(v)
}

// SetLimit records the bound drawn across a series' chart.
func (r *Result) SetLimit(series string, value float64, label string) {
	if r.Limits == nil {
		r.Limits = map[string]Limit{}
	}
	r.Limits[series] = Limit{Value: value, Label: label}
}

// Named returns every series of a name.
func (r *Result) Named(name string) []*Series {
	var out []*Series
	for _, s := range r.Series {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Sort puts events in time order and series by name, then source.
func (r *Result) Sort() {
	sort.SliceStable(r.Events, func(i, j int) bool { return r.Events[i].T < r.Events[j].T })
	sort.SliceStable(r.Series, func(i, j int) bool {
		if r.Series[i].Name != r.Series[j].Name {
			return r.Series[i].Name < r.Series[j].Name
		}
		return r.Series[i].Source < r.Series[j].Source
	})
	for _, s := range r.Series {
		sort.SliceStable(s.Points, func(i, j int) bool { return s.Points[i].T < s.Points[j].T })
	}
}

// FormatMB prints a size in MiB: "72 MiB".
func FormatMB(mb float64) string { return strconv.FormatFloat(math.Round(mb), 'f', -1, 64) + " MiB" }

// SeriesDef declares a series a plug-in records: reports chart it under
// Title, in the order the plug-ins declare them.
type SeriesDef struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
	// Marks are event kinds crossed on its chart (oom-kill, thread-limit).
	Marks []string `json:"marks,omitempty"`
	// State: each source's samples are a 0/1 state (connected or not);
	// reports chart how many sources are in state 1 at each moment.
	State bool `json:"state,omitempty"`
	// ServerView: counted per client from the servers' list of their
	// client connections, which only some systems give (lab.ConnLister).
	ServerView bool `json:"-"`
}

// Matches says whether a series name is this one, or one of the family a
// name ending in ".*" declares ("client.*": every figure a client prints).
func (d SeriesDef) Matches(name string) bool {
	if prefix, ok := strings.CutSuffix(d.Name, "*"); ok {
		return strings.HasPrefix(name, prefix) && len(name) > len(prefix)
	}
	return d.Name == name
}

// SeriesClientMemory is the series of the memory the kernel charges each
// client instance (harness/infra/instances records it; reports draw each
// client's limit against it).
const SeriesClientMemory = "client.memory_mb"

// ExitsBefore counts the instances' exits before t (a run's first fault):
// how many were OOM kills, how many in all. NaN t counts none.
func ExitsBefore(in []Instance, t float64) (ooms, deaths int) {
	for _, c := range in {
		for _, e := range c.Exits {
			if e.T < t {
				deaths++
				if e.OOM {
					ooms++
				}
			}
		}
	}
	return ooms, deaths
}
