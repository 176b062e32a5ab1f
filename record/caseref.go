package record

import (
	"strings"

	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/verdict"
)

// CaseRefFor links a report to its case record (seeds.Get: a built-in
// record, one of chaoslab's --cases, or a scenario's case: path.yaml);
// only the id when there is no such record. A record named by its path
// is linked by its id and its file.
func CaseRefFor(id string) CaseRef {
	ref := CaseRef{ID: id}
	rec, err := seeds.Get(id)
	if err != nil {
		return ref
	}
	if seeds.IsPath(id) {
		ref.ID = rec.ID
	}
	ref.Title = rec.Title
	ref.Record = rec.File()
	if rec.Builtin() {
		ref.Record = "seeds/" + rec.File()
	}
	for _, src := range rec.Sources {
		ref.Sources = append(ref.Sources, Source{URL: src.URL, Archived: src.Archived})
	}
	return ref
}

// PublishedFigure is a number of a case record as the write-up gives it:
// "about 20 minutes", "3" (a count).
func PublishedFigure(n seeds.Number) string {
	fig := verdict.FormatValue(n.Value)
	if n.Unit != "count" {
		fig += " " + strings.ReplaceAll(n.Unit, "_", " ")
	}
	if n.Approx {
		fig = "about " + fig
	}
	return fig
}

// recordNumber is a number of the case record (seeds.Get) by name.
func recordNumber(caseID, name string) (seeds.Number, bool) {
	rec, err := seeds.Get(caseID)
	if err != nil {
		return seeds.Number{}, false
	}
	for _, n := range rec.Numbers {
		if n.Name == name {
			return n, true
		}
	}
	return seeds.Number{}, false
}
