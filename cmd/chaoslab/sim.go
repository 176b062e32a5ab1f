package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/sim/cases"
)

func simCmd() *cobra.Command {
	var (
		scale     string
		calibrate string
		sweep     bool
		seed      uint64
		out       string
		workers   int
		format    string
	)
	cmd := &cobra.Command{
		Use:   "sim [ID]",
		Short: "Run an incident's discrete-event model and write its report",
		Long: `Run the discrete-event model of an incident (sim/) for each of its
variants, at the incident's scale (compared with the numbers the write-up
publishes) or at the harness's (compared with a harness run, with
--calibrate taking the model's parameters from that run's report), and
write a report of the same kind as 'chaoslab run' to OUT/<id>-sim-<scale>-<time>/.
--sweep adds the metastability maps: the outcome over a grid of trigger
settings, with the incident's point marked.

Without ID, lists the models by their case ids as 'chaoslab list' prints
them. ID is a model's case id or its scenario's, in any case (IL-0587,
il-0587).

Exit status: 0 when the model met its expectation, 1 when it did not, 2
for an input error (an unknown model or scale, a bad flag), 3 when the
model failed, 130 when interrupted.`,
		Example: `  chaoslab sim
  chaoslab sim il-0384 --sweep
  chaoslab sim il-0587 --scale harness --calibrate out/runs/il-0587-zk-treecache-reconnect-storm-<time>
  chaoslab sim aws-ebs-2011 --seed 7`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeModels,
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return printModels(cmd.OutOrStdout(), j)
			}
			c, err := cases.Get(args[0])
			if err != nil {
				return errInput(err)
			}
			if scale != "" && !slices.Contains(c.Scales, scale) {
				return errInput(fmt.Errorf("read --scale: model %s: scale %q: want one of %s", c.ID, scale, strings.Join(c.Scales, ", ")))
			}
			ctx, stop := interruptible(cmd.Context(), "interrupted: stopping the model runs and writing an aborted report")
			defer stop()
			rerun := fmt.Sprintf("chaoslab sim %s --seed %d", c.ID, seed)
			if scale != "" {
				rerun += " --scale " + scale
			}
			if calibrate != "" {
				rerun += " --calibrate " + calibrate
			}
			if sweep {
				rerun += " --sweep"
			}
			r, err := cases.Run(ctx, c, cases.Options{
				Scale: scale, Seed: seed, Calibrate: calibrate, Sweep: sweep, Workers: workers, Rerun: rerun,
				Progress: func(msg string, args ...any) { slog.Info(msg, args...) },
			})
			if err != nil {
				return err
			}
			dir := filepath.Join(out, r.RunID)
			if err := reports.Write(r, dir); err != nil {
				return err
			}
			r.Dir = dir
			if j {
				return errors.Join(printJSON(cmd, []*reports.Report{r}), outcome([]*reports.Report{r}, 1))
			}
			fmt.Fprint(cmd.OutOrStdout(), reports.Summary(r))
			return outcome([]*reports.Report{r}, 1)
		},
	}
	f := cmd.Flags()
	f.StringVar(&scale, "scale", "", "incident (the write-up's scale, compared with its numbers) or harness (the harness scenario's scale); default: the model's first")
	f.StringVar(&calibrate, "calibrate", "", "a harness run's report (folder or report.json) to take the model's parameters from (with --scale harness)")
	f.BoolVar(&sweep, "sweep", false, "also draw the metastability maps (a grid of model runs)")
	f.Uint64Var(&seed, "seed", 1, "random seed (recorded in the report; the same seed gives the same run)")
	f.StringVar(&out, "out", "out/sims", "parent folder of the report folder")
	f.IntVar(&workers, "workers", 0, "model runs of a sweep in parallel (0: one per CPU)")
	outputFlag(cmd, &format)
	return cmd
}

// model is a model as `chaoslab sim` lists it.
type model struct {
	ID       string   `json:"id"`
	Scales   []string `json:"scales"`
	Model    string   `json:"model"`
	Scenario string   `json:"scenario,omitempty"`
	Title    string   `json:"title"`
}

func printModels(w io.Writer, asJSON bool) error {
	var ms []model
	for _, c := range cases.All() {
		ms = append(ms, model{c.Ref(), c.Scales, c.Model, c.Scenario, c.Title})
	}
	if asJSON {
		return writeJSON(w, ms)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCALES\tMODEL\tSCENARIO\tTITLE")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, strings.Join(m.Scales, ","), m.Model, orNone(m.Scenario), m.Title)
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
