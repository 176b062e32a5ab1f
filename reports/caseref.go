package reports

import "github.com/chaoslab/chaoslab/seeds"

// CaseRefFor links a report to the case record id in seeds/ (only the id
// when there is no such record).
func CaseRefFor(id string) CaseRef {
	ref := CaseRef{ID: id}
	rec, err := seeds.Get(id)
	if err != nil {
		return ref
	}
	ref.Title = rec.Title
	ref.Record = "seeds/" + rec.File()
	for _, src := range rec.Sources {
		ref.Sources = append(ref.Sources, Source{URL: src.URL, Archived: src.Archived})
	}
	return ref
}
