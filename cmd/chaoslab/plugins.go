package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// faultTarget is what a fault can act on, and on which placements.
type faultTarget struct {
	System     string   `json:"system,omitempty"`
	Workload   string   `json:"workload,omitempty"`
	Selectors  []string `json:"selectors"`
	Placements []string `json:"placements"`
}

// faultInfo is a registered fault as `chaoslab faults` shows it.
type faultInfo struct {
	scenarios.FaultDoc
	Targets []faultTarget `json:"targets"`
}

func faultsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "faults",
		Short: "List the registered faults: parameters, targets and placements",
		Long: `List every registered fault a scenario's timeline can name: what it does, its
parameters with their defaults (params:), the target selectors it can act on
(target:) and the placements where it can. The same as the faults section of
scenarios/reference.md, from the plug-ins linked into this binary.

Exit status: 0; 2 for a bad flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			docs, err := scenarios.Faults()
			if err != nil {
				return err
			}
			infos := make([]faultInfo, len(docs))
			for i, d := range docs {
				infos[i] = faultInfo{FaultDoc: d, Targets: faultTargets(faults.MustNew(d.Name))}
			}
			if j {
				return writeJSON(cmd.OutOrStdout(), infos)
			}
			return printFaults(cmd.OutOrStdout(), infos)
		},
	}
	outputFlag(cmd, &format)
	return cmd
}

// faultTargets asks a fault, before anything starts, which systems'
// members (on which placements) and which workload groups it can act on.
func faultTargets(f faults.Fault) []faultTarget {
	var out []faultTarget
	for _, name := range lab.SystemNames() {
		sys, _ := lab.GetSystem(name)
		t := faultTarget{System: name, Selectors: memberSelectors(sys.Roles())}
		for _, p := range lab.PlacementNames() {
			if m, err := sys.Probe(p); err == nil && f.Available(m) == nil {
				t.Placements = append(t.Placements, p)
			}
		}
		if len(t.Placements) > 0 {
			out = append(out, t)
		}
	}
	for _, name := range lab.KindNames() {
		k, _ := lab.GetKind(name)
		for _, g := range k.Groups() {
			if f.Available(k.Probe(g)) == nil {
				out = append(out, faultTarget{Workload: name, Selectors: []string{g}, Placements: lab.PlacementNames()})
			}
		}
	}
	return out
}

// memberSelectors are the selectors naming a system's members.
func memberSelectors(roles []string) []string {
	out := append([]string(nil), roles...)
	for _, r := range roles {
		out = append(out, r+"s")
	}
	return append(out, "member", "members", "member:NAME")
}

func printFaults(w io.Writer, infos []faultInfo) error {
	for i, f := range infos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n  %s\n", f.Name, wrapText(f.Doc, 76, "  "))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TARGET\tSELECTORS\tPLACEMENTS")
		for _, t := range f.Targets {
			what := t.System + " members"
			if t.Workload != "" {
				what = t.Workload + " workload"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", what, strings.Join(t.Selectors, ", "), strings.Join(t.Placements, ", "))
		}
		if len(f.Targets) == 0 {
			fmt.Fprintln(tw, "  none here\t\t")
		}
		tw.Flush()
		printSettings(w, "  PARAMETER", f.Params)
	}
	fmt.Fprintf(w, "\nSelectors take a count: followers:2, agents:50%%, clients:all. Parameters go under params:.\n")
	return nil
}

// printSettings is a table of settings, or says there are none.
func printSettings(w io.Writer, head string, rows []scenarios.Setting) {
	if len(rows) == 0 {
		fmt.Fprintln(w, strings.TrimRight(head, " ")+": none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tDEFAULT\tMEANING\n", head)
	indent := head[:len(head)-len(strings.TrimLeft(head, " "))]
	for _, s := range rows {
		def := "—"
		if s.Default != nil && fmt.Sprint(s.Default) != "" {
			def = fmt.Sprint(s.Default)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", indent, s.Key, def, s.Doc)
	}
	tw.Flush()
}

// wrapText wraps words at width, later lines starting with indent.
func wrapText(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		switch {
		case n == 0:
		case n+1+len(word) > width:
			b.WriteString("\n" + indent)
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// metricGroup is the metrics (and series) one plug-in declares.
type metricGroup struct {
	Name     string                `json:"name"` // pipeline, system NAME, workload NAME
	Systems  []string              `json:"systems,omitempty"`
	Series   []lab.SeriesDef       `json:"series"`
	Metrics  []scenarios.MetricDoc `json:"metrics"`
	Workload string                `json:"workload,omitempty"`
	System   string                `json:"system,omitempty"`
}

// reducerDoc is one way to write a metric as a reducer of a series.
type reducerDoc struct {
	Example string `json:"example"`
	Meaning string `json:"meaning"`
}

type metricsDoc struct {
	Groups   []metricGroup `json:"groups"`
	Syntax   string        `json:"reducer_syntax"`
	Reducers []reducerDoc  `json:"reducers"`
	Windows  []reducerDoc  `json:"windows"`
}

func metricsCmd() *cobra.Command {
	var format, workload string
	cmd := &cobra.Command{
		Use:   "metrics [--workload KIND]",
		Short: "List the metrics hypotheses can name, with units, per workload kind, and the reducers",
		Long: `List the metrics a scenario's hypotheses and comparisons can name: the
pipeline's own (every scenario), each system's and each workload kind's,
with their units and how each is computed, the series they are computed
from, and the reducers that make a metric of any series
(max(client.pending)@from-fault). --workload KIND lists what a scenario of
that kind can name: the pipeline's, its systems' and its own.

Exit status: 0; 2 for a bad flag or an unknown workload kind.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			doc, err := metricsFor(workload)
			if err != nil {
				return err
			}
			if j {
				return writeJSON(cmd.OutOrStdout(), doc)
			}
			printMetrics(cmd.OutOrStdout(), doc)
			return nil
		},
	}
	cmd.Flags().StringVar(&workload, "workload", "", "only what a scenario of this workload kind can name ("+strings.Join(lab.KindNames(), ", ")+")")
	_ = cmd.RegisterFlagCompletionFunc("workload", completeKinds)
	outputFlag(cmd, &format)
	return cmd
}

// metricsFor gathers the metrics of every plug-in, or of one workload kind
// and the systems it runs against.
func metricsFor(kind string) (metricsDoc, error) {
	kinds, systems := lab.KindNames(), lab.SystemNames()
	if kind != "" {
		k, err := lab.GetKind(kind)
		if err != nil {
			return metricsDoc{}, errInput(fmt.Errorf("read --workload: %w", err))
		}
		kinds, systems = []string{kind}, k.Systems()
	}
	doc := metricsDoc{Syntax: "REDUCE(SERIES[, BOUND])[@WINDOW]"}
	doc.Groups = append(doc.Groups, metricGroup{Name: "pipeline", Series: lab.PipelineSeries(), Metrics: scenarios.MetricDocs(lab.PipelineMetrics())})
	for _, name := range systems {
		sys, err := lab.GetSystem(name)
		if err != nil {
			return metricsDoc{}, err
		}
		doc.Groups = append(doc.Groups, metricGroup{Name: "system " + name, System: name, Series: sys.Series(), Metrics: scenarios.MetricDocs(sys.Metrics())})
	}
	for _, name := range kinds {
		k, _ := lab.GetKind(name)
		doc.Groups = append(doc.Groups, metricGroup{Name: "workload " + name, Workload: name, Systems: k.Systems(), Series: k.Series(), Metrics: scenarios.MetricDocs(k.Metrics())})
	}
	for _, red := range lab.Reduces {
		r := lab.Reducer{Series: "SERIES", Reduce: red, Bound: 1}
		doc.Reducers = append(doc.Reducers, reducerDoc{r.Name(), r.Describe()})
	}
	for _, w := range lab.Windows {
		r := lab.Reducer{Series: "SERIES", Reduce: "max", Window: w}
		example := r.Name()
		if !strings.Contains(example, "@") {
			example += "@" + w // the default, written
		}
		doc.Windows = append(doc.Windows, reducerDoc{example, r.Describe()})
	}
	return doc, nil
}

func printMetrics(w io.Writer, doc metricsDoc) {
	for _, g := range doc.Groups {
		title := g.Name
		if g.Name == "pipeline" {
			title = "pipeline (every scenario)"
		}
		if len(g.Systems) > 0 {
			title += " (against " + strings.Join(g.Systems, ", ") + ")"
		}
		fmt.Fprintf(w, "%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  METRIC\tUNIT\tHOW\tMEANING")
		for _, m := range g.Metrics {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.Name, m.Unit, m.How, m.Doc)
		}
		tw.Flush()
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SERIES\tUNIT\tCHART")
		for _, s := range g.Series {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Name, s.Unit, s.Title)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Reducers: any series as a metric, %s\n", doc.Syntax)
	printReducers(w, doc.Reducers)
	fmt.Fprintln(w, "\nWindows (none written: over the run):")
	printReducers(w, doc.Windows)
}

func printReducers(w io.Writer, rs []reducerDoc) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rs {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Example, r.Meaning)
	}
	tw.Flush()
}

func schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema [scenario|case]",
		Short: "Print the JSON Schema of scenario files (scenarios/schema.json) or of case records (schema case)",
		Long: `Print the JSON Schema of scenario files, scenarios/schema.json as built into
this binary (generated from the format's Go types and the registered
plug-ins). Save it and point a scenario at it with a modeline on its
first line, with a path relative to the file:

  chaoslab schema > schema.json
  # yaml-language-server: $schema=./schema.json

chaoslab schema case prints the JSON Schema of case record files,
seeds/schema.json (seeds/reference.md documents every key); point a
record at it the same way:

  chaoslab schema case > case-schema.json
  # yaml-language-server: $schema=./case-schema.json

Exit status: 0; 2 for a bad flag or argument.`,
		Args:      cobra.MatchAll(cobra.MaximumNArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"scenario", "case"},
		RunE: func(cmd *cobra.Command, args []string) error {
			schema := scenarios.SchemaJSON()
			if len(args) == 1 && args[0] == "case" {
				schema = seeds.SchemaJSON()
			}
			_, err := cmd.OutOrStdout().Write(schema)
			return err
		},
	}
}
