package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/seeds"
)

// userCases is --cases: a folder (or file) of the user's own case records,
// known beside the built-in ones.
var userCases string

func casesFlag(root *cobra.Command) {
	userCases = ""
	root.PersistentFlags().StringVar(&userCases, "cases", "", "a folder (or file) of your own case records, known beside the built-in ones")
	_ = root.MarkPersistentFlagFilename("cases", "yaml", "yml")
}

// caseRecords are the built-in case records and those of --cases, by id;
// a record of --cases with a built-in id is an input error.
func caseRecords() ([]seeds.Record, error) {
	recs, err := seeds.All()
	if err != nil || userCases == "" {
		return recs, err
	}
	mine, err := seeds.LoadDir(userCases)
	if err != nil {
		return nil, errInput(fmt.Errorf("read --cases: %w", err))
	}
	for _, m := range mine {
		for _, r := range recs {
			if strings.EqualFold(r.ID, m.ID) {
				return nil, errInput(fmt.Errorf("read --cases: %s: id %s is a built-in case record's", m.File(), m.ID))
			}
		}
	}
	return append(recs, mine...), nil
}

// caseRecord finds a case record by id, in any case.
func caseRecord(id string) (seeds.Record, error) {
	recs, err := caseRecords()
	if err != nil {
		return seeds.Record{}, err
	}
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		if strings.EqualFold(r.ID, strings.TrimSpace(id)) {
			return r, nil
		}
		ids = append(ids, r.ID)
	}
	return seeds.Record{}, errInput(fmt.Errorf("find case: unknown case %q (known: %s)", id, strings.Join(ids, ", ")))
}
