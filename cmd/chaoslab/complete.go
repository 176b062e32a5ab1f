package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/sim/cases"
)

// Shell completion (chaoslab completion bash|zsh|fish): ids as `list`
// prints them, the variants of the scenario on the command line, the
// placements and workload kinds registered.

// completeScenarioIDs offers, for a command's first argument, the ids a
// run can take as `list` prints them: the built-in scenarios' ids and the
// case ids a scenario replays; files for a path (run, bench).
func completeScenarioIDs(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeFirst(args, toComplete, func() []string { return scenarioIDs(false) })
}

// completeAnyID is completeScenarioIDs with every case id, a scenario or
// not (show).
func completeAnyID(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeFirst(args, toComplete, func() []string { return scenarioIDs(true) })
}

// completeIDArgs is completeAnyID for every argument (validate).
func completeIDArgs(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeAnyID(cmd, nil, toComplete)
}

func completeFirst(args []string, toComplete string, ids func() []string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if looksLikePath(toComplete) {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return withPrefix(ids(), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// scenarioIDs are the built-in scenarios' ids and the case ids as `list`
// prints them: every case record's with all, else those a scenario
// replays.
func scenarioIDs(all bool) []string {
	var ids []string
	replayed := map[string]bool{}
	scens, _ := scenarios.Builtin()
	for _, s := range scens {
		ids = append(ids, s.ID)
		replayed[strings.ToUpper(s.Case)] = true
	}
	recs, _ := caseRecords()
	for _, r := range recs {
		if all || replayed[strings.ToUpper(r.ID)] {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// completeModels offers the simulator's models by their case ids as
// `list` prints them, and their scenarios' ids.
func completeModels(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeFirst(args, toComplete, func() []string {
		var ids []string
		for _, c := range cases.All() {
			ids = append(ids, c.Ref())
			if c.Scenario != "" {
				ids = append(ids, c.Scenario)
			}
		}
		return ids
	})
}

// completeVariants offers the variants of the scenario named by the first
// argument, after the ones already written (--variant vulnerable,mi<TAB>).
func completeVariants(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	s, err := scenarios.Find(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	done := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done = toComplete[:i+1]
	}
	names := s.VariantNames()
	if done == "" {
		names = append(names, "both")
	}
	var out []string
	for _, n := range names {
		if !strings.Contains(","+done, ","+n+",") {
			out = append(out, done+n)
		}
	}
	return withPrefix(out, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completePlacements offers auto and the registered placements.
func completePlacements(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return withPrefix(append([]string{"auto"}, lab.PlacementNames()...), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeKinds offers the registered workload kinds.
func completeKinds(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return withPrefix(lab.KindNames(), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// withPrefix keeps the words that start with prefix, in any case, and
// spells the part typed as it was typed: shells keep only the words that
// start with exactly what is on the command line, and every id is
// accepted in any case (il-<TAB> offers il-0587 for IL-0587).
func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if len(w) >= len(prefix) && strings.EqualFold(w[:len(prefix)], prefix) {
			out = append(out, prefix+w[len(prefix):])
		}
	}
	return out
}

func looksLikePath(s string) bool {
	return strings.ContainsAny(s, "/.~")
}

// completeSizes offers the sizes of the scenario named by the first argument.
func completeSizes(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	s, err := scenarios.Find(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return withPrefix(s.SizeNames(), toComplete), cobra.ShellCompDirectiveNoFileComp
}
