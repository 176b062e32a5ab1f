package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/verdict"
)

// Metrics are the metrics a scenario on this system and kind can name:
// the pipeline's own, the system's and the kind's, by name.
func Metrics(sys lab.System, k lab.Kind) map[string]lab.MetricDef {
	out := map[string]lab.MetricDef{}
	for _, defs := range [][]lab.MetricDef{lab.PipelineMetrics(), sys.Metrics(), k.Metrics()} {
		for _, m := range defs {
			out[m.Name] = m
		}
	}
	return out
}

// Series are the series a reducer can name on this system and kind.
func Series(sys lab.System, k lab.Kind) []lab.SeriesDef {
	return append(append(lab.PipelineSeries(), sys.Series()...), k.Series()...)
}

// checkMetric accepts a declared metric or a reducer over a known series.
func checkMetric(name string, known map[string]lab.MetricDef, series []lab.SeriesDef) error {
	if _, ok := known[name]; ok {
		return nil
	}
	r, isExpr, err := lab.ParseReducer(name)
	if !isExpr {
		names := make([]string, 0, len(known))
		for n := range known {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown metric %q (known: %s; or a reducer such as max(SERIES)@from-fault)", name, strings.Join(names, ", "))
	}
	if err != nil {
		return err
	}
	for _, s := range series {
		if s.Name == r.Series || s.Matches(r.Series) {
			return nil
		}
	}
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.Name
	}
	return fmt.Errorf("%s: unknown series %q (known: %s)", name, r.Series, strings.Join(names, ", "))
}

// checkServerView refuses a metric (or a reducer over a series) counted
// per client from the servers' list of their client connections on a
// system that gives no such list.
func checkServerView(name string, sys lab.System, known map[string]lab.MetricDef, series []lab.SeriesDef) error {
	if _, ok := sys.(lab.ConnLister); ok || !isServerView(name, known, series) {
		return nil
	}
	return fmt.Errorf("%s is what the servers count of each client from their list of client connections, which %s does not give (ZooKeeper's cons does): judge the client's processes (clients.*) or the figures it prints (client.*) instead", name, sys.Name())
}

// isServerView says whether a metric is counted per client from the
// servers' side (their list of connections, or a relay of the lab's).
func isServerView(name string, known map[string]lab.MetricDef, series []lab.SeriesDef) bool {
	view := known[name].ServerView
	if r, isExpr, err := lab.ParseReducer(name); isExpr && err == nil {
		for _, s := range series {
			view = view || (s.ServerView && (s.Name == r.Series || s.Matches(r.Series)))
		}
	}
	return view
}

// ServerViewMetrics are the hypotheses' and comparisons' metrics counted
// per client from the servers' side.
func (s *Scenario) ServerViewMetrics() []string {
	sys, err := lab.GetSystem(s.System)
	if err != nil {
		return nil
	}
	k, err := lab.GetKind(s.kind)
	if err != nil {
		return nil
	}
	known, series := Metrics(sys, k), Series(sys, k)
	var out []string
	for _, h := range s.Hypotheses {
		if isServerView(h.Metric, known, series) && !slices.Contains(out, h.Metric) {
			out = append(out, h.Metric)
		}
	}
	return out
}

// withBest is the hypotheses with the best value each metric can take,
// where its unit has one: a share is at best 1 when judged with >= or >,
// at best 0 with <= or <.
func (s *Scenario) withBest() []verdict.Hypothesis {
	out := slices.Clone(s.Hypotheses)
	sys, err := lab.GetSystem(s.System)
	if err != nil {
		return out
	}
	k, err := lab.GetKind(s.kind)
	if err != nil {
		return out
	}
	known := Metrics(sys, k)
	for i, h := range out {
		if known[h.Metric].Unit != "share" {
			continue
		}
		best := 1.0
		if h.Op == "<=" || h.Op == "<" {
			best = 0
		}
		out[i].Best = &best
	}
	return out
}

// MinBaseline is the least time between the warm-up's end and the first
// fault for a figure measured before the fault: a rate needs samples.
const MinBaseline = 10 * time.Second

// checkBaseline refuses a jump, or a reducer over the before-fault
// window, when the first fault leaves that window too short to measure:
// it would be "not measured", or a rate over a second or two.
func checkBaseline(name string, tl Timeline) error {
	r, isExpr, err := lab.ParseReducer(name)
	if !isExpr || err != nil || (r.Reduce != "jump" && r.Window != "before-fault") || len(tl.Faults) == 0 {
		return nil
	}
	if at := time.Duration(tl.Faults[0].At); at < MinBaseline {
		return fmt.Errorf("%s: measured against the before-fault window, from the warm-up's end to the first fault, which comes at %s here; a rate there needs %s or more of samples: give the first fault at: %s or later", name, at, MinBaseline, MinBaseline)
	}
	return nil
}
