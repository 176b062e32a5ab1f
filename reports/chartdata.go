package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/chaoslab/chaoslab/record"
)

// What a chart is drawn from, prepared before drawing: every variant's
// clock moved so that the variants line up on their first fault, state
// series (0/1 per source) turned into a count of sources in state 1, and
// gaps wherever a source has no sample.

// gapFactor: a source with no sample for longer than this many of its
// usual sampling intervals has a gap there (a paused server that did not
// answer, a client that was dead), drawn as a break in its line.
const gapFactor = 2.5

// alignment is where each variant's clock starts on the charts.
type alignment struct {
	// offset[variant] is subtracted from every time of that variant.
	offset map[string]float64
	// onFault: the charts count from each variant's first fault.
	onFault bool
	// what the first faults were, for the note: "pause zk3 at 46.6 s".
	firsts []string
}

// alignOnFirstFault puts the start of every variant's first fault at 0,
// when every variant has one; otherwise the variants keep their own
// clocks.
func alignOnFirstFault(r *Report) alignment {
	a := alignment{offset: map[string]float64{}}
	var firsts []string
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		f, ok := firstFault(v)
		if !ok {
			return a
		}
		a.offset[v.Name] = f.Start
		label := f.Fault
		if f.Member != "" {
			label += " " + f.Member
		}
		firsts = append(firsts, fmt.Sprintf("%s %s at %s", v.Name, label, fmtSeconds(f.Start)))
	}
	a.onFault, a.firsts = len(a.offset) > 0, firsts
	return a
}

func firstFault(v *VariantResult) (FaultWindow, bool) {
	var first FaultWindow
	ok := false
	for _, f := range v.Faults {
		if finite(f.Start) && (!ok || f.Start < first.Start) {
			first, ok = f, true
		}
	}
	return first, ok
}

// xLabel is the time axis's label.
func (a alignment) xLabel(long bool) string {
	switch {
	case a.onFault && long:
		return "time from the first fault's start"
	case a.onFault:
		return "seconds from the first fault's start"
	case long:
		return "time from variant start"
	}
	return "seconds from variant start"
}

// clock says what times count from, for a table's header.
func (a alignment) clock() string {
	if a.onFault {
		return "s from the first fault"
	}
	return "s from the variant's start"
}

// note says how the charts' time axes are set, for the page.
func (a alignment) note() string {
	if !a.onFault {
		return "Time runs in seconds from the start of each variant."
	}
	return "Time runs in seconds from the start of each variant's first fault (" + strings.Join(a.firsts, "; ") +
		"), so that the variants line up at 0; negative times are the warm-up."
}

// shifted is a copy of v for one chart: its clock moved by off, and a state
// series replaced by its count.
func shifted(v *VariantResult, spec seriesSpec, off float64) *VariantResult {
	c := *v
	c.Series = nil
	for _, s := range v.Series {
		if s == nil || s.Name != spec.Name {
			continue
		}
		sc := *s
		sc.Points = make([]Point, len(s.Points))
		for i, p := range s.Points {
			sc.Points[i] = Point{T: p.T - off, V: p.V}
		}
		c.Series = append(c.Series, &sc)
	}
	if isState(spec, v) {
		c.Series = stateCount(c.Series, spec.Name)
	}
	c.Faults = make([]FaultWindow, len(v.Faults))
	for i, f := range v.Faults {
		f.Start, f.End = f.Start-off, f.End-off
		c.Faults[i] = f
	}
	c.Events = make([]Event, len(v.Events))
	for i, e := range v.Events {
		e.T -= off
		c.Events[i] = e
	}
	return &c
}

// span is the variant's time span on its own clock: from 0 to its last
// sample or fault end, over every series.
func span(v *VariantResult) float64 {
	end := 0.0
	for _, s := range v.Series {
		if s == nil {
			continue
		}
		for _, p := range s.Points {
			if finite(p.T) {
				end = math.Max(end, p.T)
			}
		}
	}
	for _, f := range v.Faults {
		if finite(f.End) {
			end = math.Max(end, f.End)
		}
	}
	return end
}

// isState: a series of 0/1 states per source (declared, or unit "0/1" in
// reports written before the declaration) drawn as a count: for more than
// one source (one source's line reads as it is).
func isState(spec seriesSpec, v *VariantResult) bool {
	n, unit := 0, ""
	for _, s := range v.Series {
		if s != nil && s.Name == spec.Name {
			n++
			unit = s.Unit
		}
	}
	return n > 1 && (spec.State || unit == "0/1")
}

// stateCount turns each source's 0/1 samples into one series: how many
// sources were in state 1, at each step of their usual sampling interval.
// A source counts at a step while its last sample is recent (gapFactor);
// a step no source has a recent sample for is a gap.
func stateCount(series []*Series, name string) []*Series {
	if len(series) == 0 {
		return nil
	}
	step := 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		step = math.Max(step, usualInterval(s.Points))
		for _, p := range s.Points {
			if finite(p.T) {
				lo, hi = math.Min(lo, p.T), math.Max(hi, p.T)
			}
		}
	}
	if step <= 0 || !(hi >= lo) {
		return nil
	}
	out := &Series{Name: name, Source: fmt.Sprintf("of %d", len(series)), Unit: "count"}
	idx := make([]int, len(series))
	for t := lo; t <= hi+step/2; t += step {
		known, on := false, 0.0
		for i, s := range series {
			for idx[i] < len(s.Points) && s.Points[idx[i]].T <= t+1e-9 {
				idx[i]++
			}
			if idx[i] == 0 {
				continue
			}
			p := s.Points[idx[i]-1]
			if t-p.T > gapFactor*step || math.IsNaN(float64(p.V)) {
				continue
			}
			known = true
			if p.V >= 0.5 {
				on++
			}
		}
		v := math.NaN()
		if known {
			v = on
		}
		out.Points = append(out.Points, record.Pt(t, v))
	}
	return []*Series{out}
}

// usualInterval is the median time between a series' samples (0 for
// fewer than two).
func usualInterval(pts []Point) float64 {
	var dts []float64
	for i := 1; i < len(pts); i++ {
		if dt := pts[i].T - pts[i-1].T; dt > 0 && finite(dt) {
			dts = append(dts, dt)
		}
	}
	if len(dts) == 0 {
		return 0
	}
	sort.Float64s(dts)
	return dts[len(dts)/2]
}

// gapAfter is the silence after which a series' line breaks.
func gapAfter(pts []Point) float64 {
	if u := usualInterval(pts); u > 0 {
		return gapFactor * u
	}
	return math.Inf(1)
}
