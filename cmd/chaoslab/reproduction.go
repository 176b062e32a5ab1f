package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

func reproductionCmd() *cobra.Command {
	var keep, write, nextSeed string
	cmd := &cobra.Command{
		Use:   "reproduction [DIR...]",
		Short: "Count how often each scenario reproduced, from kept runs, and write the table",
		Long: `Add the runs found under each DIR (every report.json of a harness run, e.g.
the folders 'chaoslab run --repeat' wrote) to the kept runs (--keep, one JSON
line a run: scenario, placement, seed, verdict, every judged figure), then
write the reproduction table (--write): per scenario, size and placement, the
runs, how many reproduced with a 95% Wilson interval, and per hypothesis and
comparison the smallest, median and largest figure and factor from its
threshold, deciding figures within 2x flagged. Runs already kept are not
added twice, so runs of several sessions add up; runs of an earlier text of a
scenario stay kept and are not counted (a run is identified by what it ran:
the scenario's fields and its own size's, not its comments or other sizes),
nor are runs judged before the proof that one of the scenario's faults
landed was made stricter, or before a defect of its workload's program
was mended (the table says which and since when).
scripts/reproduce.sh runs the seeds and calls this.

--next-seed SCENARIO:PLACEMENT prints the seed after the largest kept one
(1 when none) and writes nothing.

Exit status: 0 when the table was written, 2 for an input error.`,
		Example: `  chaoslab reproduction out/reproduce
  chaoslab reproduction --next-seed il-0587-zk-treecache-reconnect-storm:local`,
		RunE: func(cmd *cobra.Command, args []string) error {
			kept, err := reports.ReadKept(keep)
			if err != nil {
				return errInput(err)
			}
			if nextSeed != "" {
				return printNextSeed(cmd, kept, nextSeed)
			}
			more, err := reports.FindRuns(args...)
			if err != nil {
				return errInput(err)
			}
			n := len(kept)
			kept = reports.MergeKept(kept, more)
			current, err := builtinTexts()
			if err != nil {
				return err
			}
			reports.UpgradeDigests(kept, current)
			if err := reports.WriteKept(keep, kept); err != nil {
				return err
			}
			revised, err := builtinRevisions()
			if err != nil {
				return err
			}
			md := reports.RatesMarkdown(reports.Rates(kept, current, revised...), keep, time.Now())
			if write == "-" {
				_, err = fmt.Fprint(cmd.OutOrStdout(), md)
				return err
			}
			if err := os.WriteFile(write, []byte(md), 0o644); err != nil {
				return fmt.Errorf("write table: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d runs kept (%d new) in %s; table in %s\n", len(kept), len(kept)-n, keep, write)
			return nil
		},
	}
	cmd.Flags().StringVar(&keep, "keep", "docs/reproduction/runs.jsonl", "the kept runs (created when missing)")
	cmd.Flags().StringVar(&write, "write", "docs/reproduction.md", "where the table goes (-: standard output)")
	cmd.Flags().StringVar(&nextSeed, "next-seed", "", "print the seed after the largest kept for SCENARIO:PLACEMENT, and stop")
	return cmd
}

func printNextSeed(cmd *cobra.Command, kept []reports.KeptRun, what string) error {
	id, placement, ok := strings.Cut(what, ":")
	if !ok || id == "" || placement == "" {
		return errInput(fmt.Errorf("--next-seed %q: want SCENARIO:PLACEMENT, e.g. il-0587-zk-treecache-reconnect-storm:local", what))
	}
	next := int64(1)
	for _, k := range kept {
		if k.Scenario == id && k.Placement == placement && k.Seed >= next {
			next = k.Seed + 1
		}
	}
	_, err := fmt.Fprintln(cmd.OutOrStdout(), next)
	return err
}

// builtinTexts are the built-in scenarios' texts as this chaoslab has
// them: runs of an earlier text are not counted with the current one.
func builtinTexts() (reports.Texts, error) {
	all, err := scenarios.Builtin()
	if err != nil {
		return nil, err
	}
	out := reports.Texts{}
	for _, s := range all {
		src, err := scenarios.ReadBuiltin(filepath.Base(s.Source))
		if err != nil {
			return nil, err
		}
		out[s.ID] = src
	}
	return out, nil
}

// builtinRevisions are, per built-in scenario, when the proof that one
// of its faults landed was last made stricter (faults.Revised) and when
// its workload's program was last mended (lab.Mended).
func builtinRevisions() ([]reports.Revision, error) {
	all, err := scenarios.Builtin()
	if err != nil {
		return nil, err
	}
	var out []reports.Revision
	for _, s := range all {
		if k, err := lab.GetKind(s.Kind()); err == nil {
			if m, ok := k.(lab.Mended); ok {
				since, what := m.Mended()
				out = append(out, reports.Revision{Scenario: s.ID, Since: since, What: what})
			}
		}
		for _, v := range s.VariantNames() {
			steps, err := s.FaultsFor(v)
			if err != nil {
				return nil, err
			}
			for _, st := range steps {
				f, err := faults.New(st.Fault)
				if err != nil {
					return nil, err
				}
				if r, ok := f.(faults.Revised); ok {
					since, what := r.ProofRevised()
					out = append(out, reports.Revision{Scenario: s.ID, Since: since, What: what})
				}
			}
		}
	}
	return out, nil
}
