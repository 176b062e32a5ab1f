package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// scenarioEntry is a scenario as list prints it.
type scenarioEntry struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Case     string   `json:"case"`
	System   string   `json:"system"`
	Workload string   `json:"workload"`
	Variants []string `json:"variants"`
	// PerVariant is the timeline's length, per variant.
	PerVariant string `json:"per_variant"`
	Source     string `json:"source"`
}

// caseEntry is a case record as list prints it.
type caseEntry struct {
	ID           string `json:"id"`
	Date         string `json:"date"`
	Organisation string `json:"organisation"`
	LabSystem    string `json:"lab_system"`
	Title        string `json:"title"`
	File         string `json:"file"`
}

type listing struct {
	Scenarios []scenarioEntry `json:"scenarios"`
	Cases     []caseEntry     `json:"cases"`
}

func listCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scenarios and the case records they come from",
		Long: `List the built-in scenarios and the case records (with --cases, yours too).
Every command takes an id as it is printed here, in any case.

Exit status: 0; 2 for a bad flag or a case record of --cases refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			l, err := listAll()
			if err != nil {
				return err
			}
			if j {
				return writeJSON(cmd.OutOrStdout(), l)
			}
			return printListing(cmd.OutOrStdout(), l)
		},
	}
	outputFlag(cmd, &format)
	return cmd
}

func listAll() (listing, error) {
	var l listing
	all, err := builtinScenarios()
	if err != nil {
		return l, err
	}
	for _, s := range all {
		l.Scenarios = append(l.Scenarios, scenarioEntry{s.ID, s.Title, s.Case, s.System, s.Kind(), s.VariantNames(), s.LengthText(), s.Source})
	}
	recs, err := caseRecords()
	if err != nil {
		return l, err
	}
	for _, r := range recs {
		l.Cases = append(l.Cases, caseEntry{r.ID, r.Date, r.Organisation, r.LabSystem, r.Title, r.File()})
	}
	return l, nil
}

func printListing(out io.Writer, l listing) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCASE\tSYSTEM\tVARIANTS\tLENGTH/VARIANT")
	for _, s := range l.Scenarios {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Case, s.System, strings.Join(s.Variants, ","), s.PerVariant)
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tDATE\tORGANISATION\tLAB SYSTEM\tTITLE")
	for _, r := range l.Cases {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Date, r.Organisation, r.LabSystem, r.Title)
	}
	return tw.Flush()
}

func showCmd() *cobra.Command {
	var format string
	var contract, eff bool
	cmd := &cobra.Command{
		Use:   "show ID|FILE",
		Short: "Show a case record (IL-0587, or its file) or a scenario (its id or file)",
		Long: `Show a case record by its id (with --cases, yours too) or its file, or a
scenario by its id or file: its YAML, or with -o json the scenario as the
loader read it.
With --contract, what a program of yours run in place of the scenario's
own (chaoslab run --client) is told, must do, and is judged by. With
--effective, each variant as a run takes it: its settings merged over
their defaults, its fault steps with every parameter, its length.

Exit status: 0; 2 for an unknown id or a scenario file refused.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeAnyID,
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			rec, err := caseRecord(args[0])
			if err == nil && !contract && !eff {
				return showCase(cmd.OutOrStdout(), rec, j)
			}
			if err != nil && isRecordFile(args[0]) {
				return err // a case record's file that does not validate
			}
			s, err := scenarios.Find(args[0])
			if err != nil {
				return errInput(fmt.Errorf("show %s: not a case record or a scenario: %w", args[0], err))
			}
			if contract {
				return showContract(cmd.OutOrStdout(), s, j)
			}
			if eff {
				return showEffective(cmd.OutOrStdout(), s, j)
			}
			return showScenario(cmd.OutOrStdout(), s, j)
		},
	}
	outputFlag(cmd, &format)
	cmd.Flags().BoolVar(&contract, "contract", false, "show the contract a program of yours keeps to run in place of the scenario's own (--client)")
	cmd.Flags().BoolVar(&eff, "effective", false, "show each variant as a run takes it: settings merged over their defaults, fault steps with their parameters, what the kind derives from them")
	return cmd
}

func showCase(out io.Writer, rec seeds.Record, j bool) error {
	var names []string
	all, _ := scenarios.Builtin()
	for _, s := range all {
		if strings.EqualFold(s.Case, rec.ID) {
			names = append(names, s.ID)
		}
	}
	if j {
		return writeJSON(out, struct {
			Case      seeds.Record `json:"case"`
			Scenarios []string     `json:"scenarios"`
		}{rec, names})
	}
	if err := rec.Format(out); err != nil {
		return err
	}
	if len(names) > 0 {
		fmt.Fprintf(out, "\nScenarios replaying this case: %s (chaoslab run %s)\n", strings.Join(names, ", "), names[0])
	}
	return nil
}

func showScenario(out io.Writer, s *scenarios.Scenario, j bool) error {
	src, err := os.ReadFile(s.Source)
	if err != nil {
		src, err = scenarios.ReadBuiltin(strings.TrimPrefix(s.Source, "scenarios/"))
	}
	if err != nil {
		return err
	}
	if j {
		return writeJSON(out, struct {
			Scenario   *scenarios.Scenario `json:"scenario"`
			Workload   string              `json:"workload"`
			PerVariant string              `json:"per_variant"`
			YAML       string              `json:"yaml"`
		}{s, s.Kind(), s.LengthText(), string(src)})
	}
	fmt.Fprintf(out, "# %s (case %s), %s per variant%s\n", s.ID, s.Case, s.LengthText(), sizeLengths(s))
	_, err = out.Write(src)
	return err
}

// validation is one file's (or the case records') result.
type validation struct {
	File     string    `json:"file"`
	ID       string    `json:"id,omitempty"`
	OK       bool      `json:"ok"`
	Problems []problem `json:"problems,omitempty"`
	// Notes are what passes but a reader should know: a case record's
	// sources without an archived copy.
	Notes []string `json:"notes,omitempty"`
	err   error
}

// problem is one thing validate refused.
type problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func validateCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "validate [FILE|ID...]",
		Short: "Check scenario files and case records (default: the built-in ones, and yours with --cases)",
		Long: `Check scenario files and case record files strictly: unknown fields, wrong
types, unknown faults, metrics or case records are errors naming the file,
line and field path. A file is checked as a case record when it has a
case record's keys (organisation:, sources:, ...), else as a scenario. A
built-in scenario can be named by its id or case id. Without FILE, checks
the built-in scenarios and every case record (with --cases DIR, yours
too: chaoslab validate --cases DIR).

A case record's source without an archived copy is allowed; validate
prints a note naming it.

Exit status: 0 when every file is valid, 2 when one is not (or for a bad
flag).`,
		ValidArgsFunction: completeIDArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			res := validateAll(args)
			if j {
				err = writeJSON(cmd.OutOrStdout(), res)
			} else {
				printValidation(cmd.OutOrStdout(), res)
			}
			var errs []error
			for _, r := range res {
				errs = append(errs, r.err)
			}
			if e := errors.Join(errs...); e != nil {
				return errInput(fmt.Errorf("validation failed:\n%w", e))
			}
			return err
		},
	}
	outputFlag(cmd, &format)
	return cmd
}

// validateAll checks files, or the built-in scenarios and case records.
func validateAll(files []string) []validation {
	// A record of --cases that cannot be read is the one result: every
	// scenario would fail on it too.
	if err := loadUserCases(); err != nil {
		return []validation{validated(validation{File: userCases}, err)}
	}
	var out []validation
	if len(files) == 0 {
		builtin, err := seeds.All()
		out = append(out, validated(validation{File: fmt.Sprintf("%d built-in case records", len(builtin))}, err))
		for _, r := range casesLoaded.recs {
			out = append(out, validation{File: r.File(), ID: r.ID, OK: true, Notes: r.Notes()})
		}
		all, err := scenarios.Builtin()
		for _, s := range all {
			out = append(out, validation{File: s.Source, ID: s.ID, OK: true})
		}
		if err != nil {
			out = append(out, validated(validation{File: "scenarios"}, err))
		}
	}
	for _, f := range files {
		if isRecordFile(f) {
			rec, err := seeds.LoadFile(f)
			v := validated(validation{File: f, ID: rec.ID}, err)
			if err == nil {
				v.Notes = rec.Notes()
			}
			out = append(out, v)
			continue
		}
		if rec, ok := caseWithoutScenario(f); ok {
			out = append(out, validated(validation{File: rec.File(), ID: rec.ID}, rec.Validate()))
			continue
		}
		s, err := loadScenario(f)
		v := validation{File: f}
		if s != nil {
			v.ID = s.ID
		}
		out = append(out, validated(v, err))
	}
	return out
}

// loadScenario loads a file, or finds a built-in scenario by its id or
// case id.
func loadScenario(ref string) (*scenarios.Scenario, error) {
	if _, err := os.Stat(ref); err == nil {
		return scenarios.Load(ref)
	}
	return scenarios.Find(ref)
}

// validated fills in v's result from a loader's error.
func validated(v validation, err error) validation {
	v.OK, v.err = err == nil, err
	if err == nil {
		return v
	}
	var fe scenarios.Errors
	if errors.As(err, &fe) {
		for _, e := range fe {
			v.Problems = append(v.Problems, problem{e.File, e.Line, e.Field, e.Msg})
		}
		return v
	}
	if ps := seeds.ProblemsOf(err); len(ps) > 1 || (len(ps) == 1 && ps[0].File != "") {
		for _, e := range ps {
			v.Problems = append(v.Problems, problem{e.File, e.Line, e.Field, e.Msg})
		}
		return v
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		v.Problems = append(v.Problems, problem{Message: line})
	}
	return v
}

func printValidation(out io.Writer, res []validation) {
	for _, r := range res {
		switch {
		case r.OK && r.ID != "":
			fmt.Fprintf(out, "ok  %s (%s)\n", r.File, r.ID)
		case r.OK:
			fmt.Fprintf(out, "ok  %s\n", r.File)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(out, "note: %s\n", n)
		}
	}
}

// isRecordFile says whether ref is a file that holds a case record (not a
// scenario): seeds.IsRecordText.
func isRecordFile(ref string) bool {
	st, err := os.Stat(ref)
	if err != nil || !st.Mode().IsRegular() || st.Size() > seeds.MaxRecordBytes {
		return false
	}
	data, err := os.ReadFile(ref)
	return err == nil && seeds.IsRecordText(data)
}

// sizeLengths is "; at size ci: 1m40s per variant (--size ci)" for each
// of the scenario's sizes.
func sizeLengths(s *scenarios.Scenario) string {
	var b strings.Builder
	for _, name := range s.SizeNames() {
		if sz, err := s.Sized(name); err == nil {
			fmt.Fprintf(&b, "; at size %s: %s per variant, %s (--size %s)", name, sz.LengthText(), strings.Join(sz.DefaultVariants(), ", "), name)
		}
	}
	return b.String()
}

// showContract prints what a user's program in place of the scenario's
// own is told, must do and is judged by.
func showContract(out io.Writer, s *scenarios.Scenario, j bool) error {
	st, err := s.WorkloadFor(s.VariantNames()[0])
	if err != nil {
		return err
	}
	h, ok := st.(lab.ClientHost)
	if !ok {
		return errInput(fmt.Errorf("show %s --contract: the %s workload has no program of its own for yours to replace", s.ID, s.Kind()))
	}
	c := h.Contract()
	if j {
		return writeJSON(out, c)
	}
	fmt.Fprintf(out, "# %s: your program as %s\n\nrun it: chaoslab run %s --client 'COMMAND' (on docker also --client-image IMAGE)\n\nIt is told (environment):\n", s.ID, c.Role, s.ID)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, e := range c.Env {
		fmt.Fprintf(tw, "  %s\t%s\n", e.Name, e.What)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, part := range []struct {
		title string
		items []string
	}{{"It must", c.Must}, {"The lab measures, from the outside", c.Measured},
		{"Not measured for your program (only the lab's own client times them; hypotheses on them are judged where measured)", c.NotMeasured},
		{"Judged only by (a run with your program leaves out the scenario's hypotheses on anything else)", c.Judged},
		{"Never judged by (a run with your program leaves out the scenario's hypotheses on these: they are the lab's side)", c.NotJudged},
		{"Examples", c.Examples}} {
		if len(part.items) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s:\n", part.title)
		for _, it := range part.items {
			fmt.Fprintf(out, "  - %s\n", it)
		}
	}
	return nil
}
