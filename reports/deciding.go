package reports

import (
	"fmt"

	"github.com/chaoslab/chaoslab/verdict"
)

// The deciding chart: the series behind the figure that decided the
// verdict goes first, with its threshold drawn where the figure is in
// the series' units.

// decider is the deciding figure's series and, where it can be drawn,
// its threshold.
type decider struct {
	series string
	check  verdict.Check
	line   bool // the threshold is in the series' units
}

// decidingFigure is the first broken hypothesis with a series (what made
// a vulnerable variant break), else the held one closest to its
// threshold; ok is false when no judged metric reduces a series.
func decidingFigure(r *Report) (decider, bool) {
	var held []verdict.Check
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		for _, c := range v.Hypotheses {
			if r.MetricSources[c.Metric].Series == "" || c.Missing {
				continue
			}
			if !c.Held {
				return deciderOf(r, c), true
			}
			held = append(held, c)
		}
	}
	if len(held) == 0 {
		return decider{}, false
	}
	return deciderOf(r, closestHeld(held)), true
}

func deciderOf(r *Report, c verdict.Check) decider {
	src := r.MetricSources[c.Metric]
	return decider{series: src.Series, check: c, line: src.InSeriesUnits()}
}

// label is the threshold line's label: "bounded-outstanding: <= 1000".
func (d decider) label() string {
	return fmt.Sprintf("%s: %s %s", d.check.ID, d.check.Op, verdict.FormatValue(d.check.Threshold))
}

// firstDeciding puts the deciding series' spec first.
func firstDeciding(specs []seriesSpec, d decider) []seriesSpec {
	for i, s := range specs {
		if s.Matches(d.series) || s.Name == d.series {
			out := append([]seriesSpec{s}, specs[:i]...)
			return append(out, specs[i+1:]...)
		}
	}
	return specs
}
