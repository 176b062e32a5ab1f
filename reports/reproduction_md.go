package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/verdict"
)

// CloseFactor is how near its threshold a deciding figure may come in a
// reproduction table before it is flagged: a figure within 2x could turn
// on a busier machine or another seed.
const CloseFactor = 2

// RatesMarkdown renders the reproduction table (docs/reproduction.md).
func RatesMarkdown(groups []*RateGroup, kept string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction rates\n\n")
	fmt.Fprintf(&b, "How often each seed scenario reproduces its incident, per placement, measured by replaying it at the size named (`scripts/reproduce.sh`). A run counts as reproduced when every variant reached its expected verdict and every comparison held. Each run is kept as one line of `%s`, so runs of several sessions add up; runs of an earlier text of a scenario are not counted with the current one. Written %s.\n\n", kept, now.UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("| scenario | placement | size | reproduced | 95% Wilson interval | wall time per run (median) | deciding figures within 2x of their threshold |\n|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		if len(g.Runs) == 0 {
			fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | no run counted yet | - | - | - |\n", g.Scenario, anchor(g), g.Placement, sizeName(g.Size))
			continue
		}
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %d of %d | %.0f%%-%.0f%% | %s | %s |\n", g.Scenario, anchor(g), g.Placement, sizeName(g.Size),
			g.Reproduced, len(g.Runs), 100*g.Low, 100*g.High, wallMedian(g.Runs), closeList(g.Figures))
	}
	for _, g := range groups {
		groupMarkdown(&b, g)
	}
	return b.String()
}

func anchor(g *RateGroup) string {
	return strings.ToLower(g.Scenario + "-on-" + g.Placement + "-" + sizeName(g.Size))
}

func sizeName(s string) string {
	if s == "" {
		return "full"
	}
	return s
}

func wallMedian(runs []KeptRun) string {
	var w []float64
	for _, r := range runs {
		w = append(w, r.WallS)
	}
	slices.Sort(w)
	m := median(w)
	if math.IsNaN(m) {
		return "-"
	}
	return (time.Duration(m) * time.Second).String()
}

func closeList(fs []FigureSpread) string {
	var out []string
	for _, f := range fs {
		if f.Close(CloseFactor) {
			v := f.Variant
			if v == "" {
				v = "comparison"
			}
			out = append(out, fmt.Sprintf("%s %s (%s)", v, f.Check, factorText(f.SmallestDeciding)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}

func groupMarkdown(b *strings.Builder, g *RateGroup) {
	fmt.Fprintf(b, "\n## %s on %s, %s\n\n", g.Scenario, g.Placement, sizeName(g.Size))
	fmt.Fprintf(b, "<a id=\"%s\"></a>", anchor(g))
	if len(g.Runs) > 0 {
		fmt.Fprintf(b, "Reproduced in %d of %d runs (95%% interval %.0f%%-%.0f%%); seeds %s; chaoslab %s.", g.Reproduced, len(g.Runs), 100*g.Low, 100*g.High, seedList(g.Runs), commitList(g.Runs))
	} else {
		b.WriteString("No run counted yet.")
	}
	if g.Stale > 0 {
		fmt.Fprintf(b, " %d runs of an earlier text of the scenario are kept but not counted.", g.Stale)
	}
	if n := len(g.Unproven); n > 0 {
		fmt.Fprintf(b, " %d runs (seeds %s) were judged before %s (%s) and are kept but not counted.", n, seedList(g.Unproven), g.UnprovenWhy.What, g.UnprovenWhy.Since.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if len(g.Aborted) > 0 {
		fmt.Fprintf(b, " %d runs were interrupted before they could be judged (seeds %s) and are not counted.", len(g.Aborted), seedList(g.Aborted))
	}
	if len(g.LabFailed) > 0 {
		fmt.Fprintf(b, " In %d runs the lab itself failed or a fault did not land (seeds %s): they say nothing of the incident and are not counted.", len(g.LabFailed), seedList(g.LabFailed))
	}
	b.WriteString("\n")
	for _, r := range g.LabFailed {
		first, _, _ := strings.Cut(r.labFailure(), "\n") // a log's tail follows
		fmt.Fprintf(b, "\n- seed %d (run %s), the lab failed: %s", r.Seed, r.RunID, first)
	}
	if len(g.LabFailed) > 0 {
		b.WriteString("\n")
	}
	if len(g.Runs) == 0 {
		return
	}
	b.WriteString("\n")
	for _, r := range g.Runs {
		if !(r.Verdict == verdict.Reproduced && r.Met) {
			fmt.Fprintf(b, "- seed %d (run %s): %s: %s\n", r.Seed, r.RunID, strings.ToUpper(string(r.Verdict)), r.Reason)
		}
	}
	b.WriteString("\nA figure decides its variant's verdict when every figure of the variant must hold (a variant expected to hold, a comparison), or when it is the strongest break of a variant expected to break (a variant breaks when any hypothesis does; a count against none allowed or a time never reached is the strongest). Only deciding figures are flagged within 2x.\n\n")
	b.WriteString("| variant | figure | want | held | decided | observed: smallest · median · largest | factor from the threshold: smallest · median · largest |\n|---|---|---|---|---|---|---|\n")
	for _, f := range g.Figures {
		v := f.Variant
		if v == "" {
			v = "(comparison)"
		}
		flag := ""
		if f.Close(CloseFactor) {
			flag = " **within 2x**"
		}
		fmt.Fprintf(b, "| %s | %s | %s %s | %d of %d | %d of %d | %s | %s%s |\n", v, f.Check, f.Op, verdict.FormatValue(f.Threshold),
			f.Held, f.Runs, f.DecidingRuns, f.Runs, spread(f.Observed, verdict.FormatValue), factorSpread(f), flag)
	}
}

func spread(xs []float64, format func(float64) string) string {
	if len(xs) == 0 {
		return "-"
	}
	return format(xs[0]) + " · " + format(median(xs)) + " · " + format(xs[len(xs)-1])
}

func factorSpread(f FigureSpread) string {
	s := spread(f.Factors, factorText)
	if f.NoFactor > 0 {
		s += fmt.Sprintf(" (%d without a factor: never, missing, 0, or at the best value)", f.NoFactor)
	}
	return s
}

func seedList(runs []KeptRun) string {
	var s []string
	for _, r := range runs {
		s = append(s, fmt.Sprint(r.Seed))
	}
	return strings.Join(s, ", ")
}

func commitList(runs []KeptRun) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		c := r.Commit
		if c == "" {
			c = "unknown"
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, "`"+c+"`")
		}
	}
	return strings.Join(out, ", ")
}

// factorText prints a factor with two significant figures: 1.6x, 15x, 1600x.
func factorText(x float64) string { return verdict.FormatFactor(x) + "x" }
