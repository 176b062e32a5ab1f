package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/seeds"
)

// userCases is --cases: a folder (or file) of the user's own case records,
// known beside the built-in ones.
var userCases string

// loadedCases is --cases as read for a command: its records are
// registered with seeds (so that every lookup, seeds.Get, finds them),
// once.
type loadedCases struct {
	path string
	done bool
	recs []seeds.Record
	err  error
}

var casesLoaded loadedCases

// caseNotes is where the notes of reading --cases go (the command's
// standard error; none before a command runs).
var caseNotes io.Writer = io.Discard

func casesFlag(root *cobra.Command) {
	userCases, casesLoaded, caseNotes = "", loadedCases{}, io.Discard
	seeds.ResetRegistered()
	root.PersistentFlags().StringVar(&userCases, "cases", "", "a folder (or file) of your own case records, known beside the built-in ones")
	_ = root.MarkPersistentFlagFilename("cases", "yaml", "yml")
}

// loadUserCases reads --cases and registers its records, once per
// command; a scenario in the folder is skipped with a note. A record it
// cannot read, or one with a built-in id, is an input error.
func loadUserCases() error {
	if userCases == "" {
		return nil
	}
	l := &casesLoaded
	if l.done && l.path == userCases {
		return l.err
	}
	*l = loadedCases{path: userCases, done: true}
	recs, skipped, err := seeds.LoadDir(userCases)
	for _, s := range skipped {
		fmt.Fprintf(caseNotes, "note: --cases %s\n", s)
	}
	if err == nil {
		err = seeds.Register(recs...)
	}
	if err != nil {
		l.err = errInput(fmt.Errorf("read --cases: %w", err))
		return l.err
	}
	l.recs = recs
	return nil
}

// caseRecords are the built-in case records and those of --cases, by id.
func caseRecords() ([]seeds.Record, error) {
	if err := loadUserCases(); err != nil {
		return nil, err
	}
	return seeds.Known()
}

// caseRecord finds a case record (seeds.Get): by id, in any case, among
// the built-in ones and those of --cases; or by the path of its file.
func caseRecord(ref string) (seeds.Record, error) {
	if err := loadUserCases(); err != nil {
		return seeds.Record{}, err
	}
	rec, err := seeds.Get(ref)
	return rec, errInput(err)
}
