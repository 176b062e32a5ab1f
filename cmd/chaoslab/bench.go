package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
)

// The lab's own cost, as the targets say it: each variant's wall time
// at most 5% over its timeline, the controller under 200 MB.
const (
	benchMaxRatio = 1.05
	benchMaxRSSMB = 200
)

func benchCmd() *cobra.Command {
	var (
		variant, placement, out string
		seed                    int64
		check                   bool
	)
	cmd := &cobra.Command{
		Use:   "bench ID|FILE",
		Short: "Replay a scenario and print what the lab itself costs: setup, teardown, wall time over the timeline, the controller's memory",
		Long: `Replay a scenario as 'chaoslab run' does and print, for each variant, the
lab's setup (servers up, seeding), the scenario's timeline (warm-up as
extended until the workload was steady, faults, observation), the
teardown, and the wall time over the timeline, side by side in one run,
with the controller's peak RSS. Targets: at most ` + fmt.Sprint(benchMaxRatio) + ` and under ` + fmt.Sprint(benchMaxRSSMB) + ` MB;
--check exits 1 when they are missed.

Exit status: 0; 1 with --check when a target is missed; 2 for an input
error; 3 when the lab failed.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenarioIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := findScenario(args[0])
			if err != nil {
				return err
			}
			if err := checkPlacement(placement); err != nil {
				return err
			}
			if err := checkVariants(s, variant); err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.Context(), "interrupted: stopping the bench")
			defer stop()
			var variants []string
			if variant != "" && variant != "both" {
				variants = strings.Split(variant, ",")
			}
			r, err := runner.Run(ctx, s, runner.Options{Variants: variants, Seed: seed, OutDir: out, Placement: placement})
			if err != nil {
				return err
			}
			ok := printBench(cmd.OutOrStdout(), r, peakRSSMB())
			if check && !ok {
				return errExpectation
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&variant, "variant", "both", "a variant, a comma-separated list, or both")
	f.StringVar(&placement, "placement", "auto", "local, docker or auto")
	f.StringVar(&out, "out", "out/bench", "parent folder of the run's report")
	f.Int64Var(&seed, "seed", 1, "random seed")
	f.BoolVar(&check, "check", false, "exit 1 when a target is missed")
	runCompletions(cmd)
	return cmd
}

// printBench prints the table and says whether every target was met.
func printBench(w io.Writer, r *reports.Report, rssMB float64) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "variant\tsetup s\ttimeline s\tteardown s\twall s\twall/timeline\tplanned s\twall/planned\t\n")
	ok := true
	for _, v := range r.Variants {
		t := v.Timing
		ratio := t.WallS / t.TimelineS
		ok = ok && ratio <= benchMaxRatio
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.3f\t%.0f\t%.3f\t\n", v.Name, t.SetupS, t.TimelineS, t.TeardownS, t.WallS, ratio, t.PlannedS, t.WallS/t.PlannedS)
	}
	tw.Flush()
	ok = ok && rssMB < benchMaxRSSMB
	verdict := "met"
	if !ok {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "controller peak RSS %.0f MB; targets (wall/timeline <= %.2f, RSS < %d MB): %s\nreport: %s\n", rssMB, benchMaxRatio, benchMaxRSSMB, verdict, r.Dir)
	return ok
}

// peakRSSMB is this process's peak resident set (getrusage ru_maxrss, KiB
// on Linux).
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "bench: getrusage:", err)
		return 0
	}
	return float64(ru.Maxrss) / 1024
}
