package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

func listCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the scenarios and the case records they come from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			all, err := scenarios.Builtin()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCENARIO\tCASE\tSYSTEM\tVARIANTS\tLENGTH/VARIANT")
			for _, s := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Case, s.System, strings.Join(s.VariantNames(), ","), s.RunLength())
			}
			tw.Flush()
			recs, err := seeds.All()
			if err != nil {
				return err
			}
			fmt.Fprintln(out)
			tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CASE\tDATE\tORGANISATION\tLAB SYSTEM\tTITLE")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Date, r.Organisation, r.LabSystem, r.Title)
			}
			return tw.Flush()
		},
	}
}

func showCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a case record (IL-0587) or a scenario (its id or file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if rec, err := seeds.Get(args[0]); err == nil {
				if err := rec.Format(out); err != nil {
					return err
				}
				var names []string
				all, _ := scenarios.Builtin()
				for _, s := range all {
					if strings.EqualFold(s.Case, rec.ID) {
						names = append(names, s.ID)
					}
				}
				if len(names) > 0 {
					fmt.Fprintf(out, "\nScenarios replaying this case: %s (chaoslab run %s)\n", strings.Join(names, ", "), names[0])
				}
				return nil
			}
			s, err := scenarios.Find(args[0])
			if err != nil {
				return fmt.Errorf("show %s: not a case record or a scenario: %w", args[0], err)
			}
			src, err := os.ReadFile(s.Source)
			if err != nil {
				src, err = scenarios.ReadBuiltin(strings.TrimPrefix(s.Source, "scenarios/"))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "# %s (case %s), %s per variant\n", s.ID, s.Case, s.RunLength())
			_, err = out.Write(src)
			return err
		},
	}
}

func validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Check scenario files (default: the built-in ones and every case record)",
		Long: `Check scenario files strictly: unknown fields, wrong types, unknown faults,
metrics or case records are errors naming the file, line and field path.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			var errs []error
			if len(args) == 0 {
				recs, err := seeds.All()
				if err != nil {
					errs = append(errs, err)
				} else {
					fmt.Fprintf(out, "ok  %d case records\n", len(recs))
				}
				all, err := scenarios.Builtin()
				if err != nil {
					errs = append(errs, err)
				}
				for _, s := range all {
					fmt.Fprintf(out, "ok  %s (%s)\n", s.Source, s.ID)
				}
			}
			for _, f := range args {
				s, err := scenarios.Load(f)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(out, "ok  %s (%s)\n", f, s.ID)
			}
			if len(errs) > 0 {
				return fmt.Errorf("validation failed:\n%w", errors.Join(errs...))
			}
			return nil
		},
	}
}
