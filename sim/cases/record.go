package cases

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/sim"
	"github.com/chaoslab/chaoslab/verdict"
)

// The numbers a model is compared with, and the incident's own settings it
// runs with, come from the case record (seeds/<id>.yaml), not from copies
// in Go: a corrected record changes the comparison.

// number returns the record's published figure by name; it panics when the
// record lacks it, which TestCasesAreLinked catches for every case.
func number(caseID, name string) seeds.Number {
	rec, err := seeds.Get(caseID)
	if err != nil {
		panic(fmt.Sprintf("case %s: %v", caseID, err))
	}
	for _, n := range rec.Numbers {
		if n.Name == name {
			return n
		}
	}
	panic(fmt.Sprintf("case %s: the record seeds/%s has no number %q", caseID, rec.File(), name))
}

// publishedRow is an IncidentRow for a number of the record: what it says
// and its figure, as the record gives them.
func publishedRow(caseID, name, metric, variant, unit string) (reports.IncidentRow, seeds.Number) {
	n := number(caseID, name)
	return reports.IncidentRow{
		Incident: strings.Join(strings.Fields(n.Text), " "), Published: reports.PublishedFigure(n), Number: n.Name,
		Metric: metric, Variant: variant, Unit: unit,
	}, n
}

// calibration loads the harness report to calibrate from: the one named,
// or the reference run kept in the repository; it must be a run of the
// scenario.
func calibration(path, reference, scenario string) (*reports.Report, error) {
	if path == "" {
		path = reference
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("calibrate: no --calibrate report given and the reference %s is not here (run from the repository's root): %w", reference, err)
		}
	}
	r, err := reports.Load(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if r.Scenario == nil || r.Scenario.ID != scenario {
		id := "none"
		if r.Scenario != nil {
			id = r.Scenario.ID
		}
		return nil, fmt.Errorf("calibrate: %s is a run of scenario %s, want %s", path, id, scenario)
	}
	if r.Dir == "" {
		r.Dir = filepath.Dir(path)
	}
	return r, nil
}

// atHarness is the harness scenario a case is calibrated by, at the
// harness's scale; nil at any other scale.
func atHarness(scale, id string) *scenarios.Scenario {
	if scale != ScaleHarness {
		return nil
	}
	s, err := scenarios.Find(id)
	if err != nil {
		return nil
	}
	return s
}

// againstHarness compares a calibrated run with its harness run, figure by
// figure (the harness.* metrics the variants carry), within factor; ok is
// false for a run that was not calibrated.
func againstHarness(res map[string]sim.Result, compared []string, factor float64) ([]reports.IncidentRow, bool) {
	var names []string
	for name, r := range res {
		for k := range r.Metrics {
			if strings.HasPrefix(k, "harness.") {
				names = append(names, name)
				break
			}
		}
	}
	if len(names) == 0 {
		return nil, false
	}
	sort.Strings(names)
	var rows []reports.IncidentRow
	for _, name := range names {
		r := res[name]
		for _, k := range compared {
			h, ok := r.Metrics["harness."+k]
			if !ok {
				continue
			}
			rows = append(rows, band(reports.IncidentRow{
				Incident:  "The harness run of the same scenario at the same scale (real servers, real clients).",
				Published: verdict.FormatValue(h), Metric: k, Variant: name, Against: "harness run",
				Note: fmt.Sprintf("agreement within %gx of the harness's figure", factor),
			}, r.Metrics[k], h/factor, h*factor))
		}
	}
	return rows, true
}

// withHarness puts the harness run's own figures next to a calibrated
// model's, as metrics of the variant (harness.*), for againstHarness.
func withHarness(res sim.Result, hv *reports.VariantResult, compared []string) sim.Result {
	if hv == nil {
		return res
	}
	for _, k := range compared {
		if x, ok := hv.Metrics[k]; ok {
			res.Metrics["harness."+k] = float64(x)
		}
	}
	return res
}

// responderAction is one of the responders' actions of a case record's
// timeline, timed from the record's first timed entry (the trigger).
type responderAction struct {
	Kind   string  // one of seeds.ActionKinds
	After  float64 // s from the first timed entry to the action's entry
	Window float64 // s from the action's entry to its Until (0: none given)
	Clock  string  // the entry's clock time, e.g. 12:42 UTC
	Source string
}

// responderActions returns the record's actions in timeline order; it
// panics when the record does not parse, which TestCasesAreLinked catches.
func responderActions(caseID string) []responderAction {
	rec, err := seeds.Get(caseID)
	if err != nil {
		panic(fmt.Sprintf("case %s: %v", caseID, err))
	}
	var out []responderAction
	day, origin := rec.Date, time.Time{}
	for _, t := range rec.Timeline {
		if t.Date != "" {
			day = t.Date
		}
		if t.At == "" {
			continue
		}
		at, err := clockTime(day, t.At)
		if err != nil {
			panic(fmt.Sprintf("case %s: %v", caseID, err))
		}
		if origin.IsZero() {
			origin = at
		}
		for _, a := range t.Actions {
			ra := responderAction{Kind: a.Kind, After: at.Sub(origin).Seconds(), Clock: t.At, Source: a.Source}
			if a.Until != "" {
				until, err := clockTime(day, a.Until)
				if err != nil {
					panic(fmt.Sprintf("case %s: %v", caseID, err))
				}
				ra.Window = until.Sub(at).Seconds()
			}
			out = append(out, ra)
		}
	}
	return out
}

// clockTime reads a record's "HH:MM UTC" on day (YYYY-MM-DD); the zone is
// the record's own and is not converted.
func clockTime(day, clock string) (time.Time, error) {
	hm, _, _ := strings.Cut(clock, " ")
	t, err := time.Parse(seeds.DateLayout+" 15:04", day+" "+hm)
	if err != nil {
		return t, fmt.Errorf("read clock %q on %s: %w", clock, day, err)
	}
	return t, nil
}
