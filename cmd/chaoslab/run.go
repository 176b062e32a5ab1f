package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

func runCmd() *cobra.Command {
	var (
		variant   string
		seed      int64
		out       string
		placement string
		imgs      map[string]string
	)
	cmd := &cobra.Command{
		Use:   "run ID|FILE",
		Short: "Replay a scenario on real servers and write its report",
		Long: `Replay a scenario: start the servers, run the client workload of each
variant, inject the incident's faults, measure, and write a report to
OUT/<scenario>-<time>/ (report.json, report.md, index.html).

Exit status: 0 when the run met the scenario's expectation (for both
variants: REPRODUCED), 1 when it completed without meeting it, 2 when the
lab itself failed, 130 when it was interrupted. Ctrl-C stops the run, cleans up every process and cgroup
it started, and still writes a report marked aborted.`,
		Example: `  chaoslab run il-0587-zk-treecache-reconnect-storm
  chaoslab run IL-0587 --variant mitigated --seed 7
  chaoslab run ./my-scenario.yaml --out /tmp/runs`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := scenarios.Find(args[0])
			if err != nil {
				return err
			}
			var variants []string
			switch variant {
			case "", "both", "all":
			default:
				variants = strings.Split(variant, ",")
			}
			ctx, stop := interruptible(cmd.Context(), "interrupted: stopping the run, cleaning up and writing an aborted report")
			defer stop()
			rerun := fmt.Sprintf("chaoslab run %s --seed %d", s.ID, seed)
			if variant != "" && variant != "both" {
				rerun += " --variant " + variant
			}
			r, err := runner.Run(ctx, s, runner.Options{Variants: variants, Seed: seed, OutDir: out, Placement: placement, Images: imgs, Rerun: rerun})
			if r != nil && r.Dir != "" {
				fmt.Fprint(cmd.OutOrStdout(), reports.Summary(r))
			}
			if err != nil {
				return err
			}
			return outcome(r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&variant, "variant", "both", "a variant (vulnerable, mitigated, ...), a comma-separated list, or both (every variant)")
	f.Int64Var(&seed, "seed", 1, "random seed (recorded in the report; the same seed replays the same choices)")
	f.StringVar(&out, "out", "out/runs", "parent folder of the run's report folder")
	f.StringVar(&placement, "placement", "auto", "where servers and clients run: local (processes here), docker (containers), auto (docker when an engine answers and the images are here, else local, unless the workload was calibrated on one)")
	f.StringVar(&placement, "backend", "auto", "the same as --placement")
	_ = f.MarkHidden("backend")
	f.StringToStringVar(&imgs, "image", nil, "image of a system on the docker placement, e.g. --image zookeeper=zookeeper:3.8 (also CHAOSLAB_ZOOKEEPER_IMAGE, CHAOSLAB_CLIENT_IMAGE, or topology.zookeeper.image)")
	return cmd
}

func reportCmd() *cobra.Command {
	var scenario string
	var write bool
	cmd := &cobra.Command{
		Use:   "report DIR|report.json",
		Short: "Load a report, re-check its verdict and print its summary",
		Long: `Load a report written by 'chaoslab run', judge its stored measurements
again (optionally against another version of the scenario, to ask whether an
old run passes new hypotheses), and print the summary. --write rewrites
report.md and index.html.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := reports.Load(args[0])
			if err != nil {
				return err
			}
			var s *scenarios.Scenario
			if scenario != "" {
				if s, err = scenarios.Find(scenario); err != nil {
					return err
				}
			}
			before := r.Verdict
			if _, _, err := r.Recheck(s); err != nil {
				return err
			}
			if write {
				if err := reports.Write(r, r.Dir); err != nil {
					return err
				}
			}
			fmt.Fprint(cmd.OutOrStdout(), reports.Summary(r))
			if before != r.Verdict {
				fmt.Fprintf(cmd.OutOrStdout(), "re-checked verdict %s differs from the stored one (%s)\n", r.Verdict, before)
			}
			if !r.ExpectationMet {
				return errExpectation
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "", "judge against this scenario (id or file) instead of the one stored in the report")
	cmd.Flags().BoolVar(&write, "write", false, "write report.json, report.md and index.html again with the re-checked verdict")
	return cmd
}

// interruptible returns a context cancelled, with the signal as its cause,
// on Ctrl-C or SIGTERM (after logging msg), and the function that stops
// listening.
func interruptible(parent context.Context, msg string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			slog.Warn(msg, "signal", sig.String())
			cancel(fmt.Errorf("%s received", sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// outcome is a finished run's exit: errAborted when it was interrupted,
// errExpectation when it did not meet its expectation, nil otherwise.
func outcome(r *reports.Report) error {
	if r.Verdict == verdict.Aborted {
		return errAborted
	}
	if !r.ExpectationMet {
		return errExpectation
	}
	return nil
}
