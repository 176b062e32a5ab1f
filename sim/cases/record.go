package cases

import (
	"fmt"
	"strings"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/seeds"
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
