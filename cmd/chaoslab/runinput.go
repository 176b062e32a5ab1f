package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/sim/cases"
)

// findScenario is scenarios.Find; what it refuses (an unknown id, a file
// the loader refuses) is an input error.
func findScenario(ref string) (*scenarios.Scenario, error) {
	if isRecordFile(ref) {
		return nil, errInput(fmt.Errorf("find scenario: %s is a case record, not a scenario: chaoslab new scenario --case %s writes a scenario for it", ref, ref))
	}
	if rec, ok := caseWithoutScenario(ref); ok {
		msg := fmt.Sprintf("find scenario: case %s has no harness scenario", rec.ID)
		if _, err := cases.Get(rec.ID); err == nil {
			msg += fmt.Sprintf("; its model runs with chaoslab sim %s", rec.ID)
		}
		return nil, errInput(errors.New(msg))
	}
	s, err := scenarios.Find(ref)
	return s, errInput(err)
}

// caseWithoutScenario is the case record ref names (its id, in any case)
// when no built-in scenario replays it.
func caseWithoutScenario(ref string) (seeds.Record, bool) {
	if _, err := os.Stat(ref); err == nil {
		return seeds.Record{}, false
	}
	rec, err := caseRecord(ref)
	if err != nil {
		return seeds.Record{}, false
	}
	if _, err := scenarios.Find(rec.ID); err == nil {
		return seeds.Record{}, false
	}
	return rec, true
}

// check refuses, before anything starts, what run's flags get wrong for
// s; -o json is --json.
func (f *runFlags) check(s *scenarios.Scenario) error {
	j, err := asJSON(f.output)
	if err != nil {
		return err
	}
	f.asJSON = f.asJSON || j
	if err := checkPlacement(f.placement); err != nil {
		return err
	}
	if !(f.minRate > 0 && f.minRate <= 1) {
		return errInput(fmt.Errorf("read --min-rate: %g: want a share of the runs, more than 0 and at most 1", f.minRate))
	}
	return checkVariants(s, f.variant)
}

// checkPlacement refuses a placement that is not registered (or auto).
func checkPlacement(name string) error {
	known := append([]string{"auto"}, lab.PlacementNames()...)
	if name == "" || slices.Contains(known, name) {
		return nil
	}
	return errInput(fmt.Errorf("read --placement: %q: want one of %s", name, strings.Join(known, ", ")))
}

// checkVariants refuses --variant names that s does not have.
func checkVariants(s *scenarios.Scenario, list string) error {
	switch list {
	case "", "both", "all":
		return nil
	}
	for _, v := range strings.Split(list, ",") {
		if !slices.Contains(s.VariantNames(), v) {
			return errInput(fmt.Errorf("read --variant: %s has no variant %q (has %s)", s.ID, v, strings.Join(s.VariantNames(), ", ")))
		}
	}
	return nil
}

// runCompletions completes the flags run and bench share.
func runCompletions(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("variant", completeVariants)
	if cmd.Flags().Lookup("size") != nil {
		_ = cmd.RegisterFlagCompletionFunc("size", completeSizes)
	}
	for _, name := range []string{"placement", "backend"} {
		if cmd.Flags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, completePlacements)
		}
	}
}

// builtinScenarios is scenarios.Builtin; what the loader refuses is an
// input error (with --cases, a case record it cannot read).
func builtinScenarios() ([]*scenarios.Scenario, error) {
	all, err := scenarios.Builtin()
	return all, errInput(err)
}
