package cases

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
	fig := verdict.FormatValue(n.Value) + " " + strings.ReplaceAll(n.Unit, "_", " ")
	if n.Approx {
		fig = "about " + fig
	}
	return reports.IncidentRow{
		Incident: strings.Join(strings.Fields(n.Text), " "), Published: fig, Number: n.Name,
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
