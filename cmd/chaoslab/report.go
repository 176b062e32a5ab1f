package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

func reportCmd() *cobra.Command {
	var scenario, format string
	var write bool
	cmd := &cobra.Command{
		Use:   "report DIR|report.json",
		Short: "Load a report, re-check its verdict and print its summary",
		Long: `Load a report written by 'chaoslab run', judge its stored measurements
again (optionally against another version of the scenario, to ask whether an
old run passes new hypotheses), and print the summary, or with -o json the
verdicts as 'chaoslab run -o json' prints them. --write rewrites report.md
and index.html.

A run folder without a report whose controller died (SIGKILL, the OOM
killer, a CI timeout) gets one first, from the run's journal: marked
aborted, with the cause and every sample up to the death.

Exit status: 0 when the re-judged report meets its expectation, 1 when it
does not (also for a run that was interrupted), 2 for an input error (no
report there, an unknown scenario, a bad flag), 3 when its run was
inconclusive because the lab failed.`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			r, err := loadReport(cmd, args[0])
			if err != nil {
				return errInput(err)
			}
			if err := specFor(r, scenario); err != nil {
				return err
			}
			before := r.Verdict
			if _, _, err := r.Recheck(); err != nil {
				return errInput(fmt.Errorf("re-check %s: %w", args[0], err))
			}
			if write {
				if err := reports.Write(r, r.Dir); err != nil {
					return err
				}
			}
			if j {
				err = printJSON(cmd, []*reports.Report{r})
			} else {
				fmt.Fprint(cmd.OutOrStdout(), reports.Summary(r))
				if before != r.Verdict {
					fmt.Fprintf(cmd.OutOrStdout(), "re-checked verdict %s differs from the stored one (%s)\n", r.Verdict, before)
				}
			}
			return errors.Join(err, rejudged(r))
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "", "judge against this scenario (id or file) instead of the one stored in the report")
	cmd.Flags().BoolVar(&write, "write", false, "write report.json, report.md and index.html again with the re-checked verdict")
	_ = cmd.RegisterFlagCompletionFunc("scenario", completeIDArgs)
	outputFlag(cmd, &format)
	return cmd
}

// loadReport loads the report at path; a run folder whose controller died
// before writing one gets it first, rebuilt from the run's journal.
func loadReport(cmd *cobra.Command, path string) (*reports.Report, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() && journal.Exists(path) {
		if _, err := os.Stat(filepath.Join(path, "report.json")); errors.Is(err, os.ErrNotExist) {
			_, d, err := journal.Finish(path, journal.ByReport)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report rebuilt from the run's journal: %s\n", d.Cause())
		}
	}
	return reports.Load(path)
}

// rejudged is a re-judged report's exit: an interrupted run is one that
// did not meet its expectation, not an interrupted command.
func rejudged(r *reports.Report) error {
	err := outcome([]*reports.Report{r}, 1)
	if errors.Is(err, errAborted) || (r.Verdict == verdict.Aborted && err == nil) {
		return errExpectation
	}
	return err
}

// reportScenario is the id of a report's scenario, or of its case for a
// model's report (which has no scenario).
func reportScenario(r *reports.Report) string {
	if r.Scenario != nil {
		return r.Scenario.ID
	}
	return r.Case.ID
}

// specFor sets what r is judged by: another scenario's spec (--scenario),
// or, for a record written before it kept its spec, its own scenario's.
func specFor(r *reports.Report, scenario string) error {
	var s *scenarios.Scenario
	var err error
	switch {
	case scenario != "":
		if s, err = findScenario(scenario); err != nil {
			return err
		}
	case r.Spec == nil && r.ScenarioYAML != "":
		if s, err = scenarios.OfRecord(r); err != nil {
			return errInput(err)
		}
	default:
		return nil
	}
	spec := reports.WithPublished(s.Spec(), r.Case.ID)
	r.Spec = &spec
	return nil
}
