package reports

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chaoslab/chaoslab/verdict"
)

// Summary is what `chaoslab run` prints at the end of a run: the verdict and
// its reason, each variant's verdict with one line per hypothesis, the
// comparisons, and where the report is.
func Summary(r *Report) string {
	if r == nil {
		return "no report\n"
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	name := r.Case.ID
	if r.Scenario != nil && r.Scenario.ID != "" {
		name = r.Scenario.ID
	}
	p("%s  %s\n", verdictWord(r.Verdict), name)
	if r.Reason != "" {
		p("  %s\n", r.Reason)
	}
	if r.ExpectationMet {
		p("  expectation met\n")
	} else {
		p("  expectation NOT met\n")
	}
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		mark := "as expected"
		if v.Expect != "" && v.Verdict != v.Expect {
			mark = "expected " + string(v.Expect)
		}
		p("  %s: %s (%s)\n", v.Name, v.Verdict, mark)
		for _, c := range v.Hypotheses {
			p("    %s %s%s\n", checkMark(c, v.Expect), c.String(), marginNote(c))
		}
		if len(v.Hypotheses) == 0 && v.Reason != "" {
			p("    %s\n", v.Reason)
		}
	}
	if len(r.Comparisons) > 0 {
		p("  comparisons:\n")
		for _, c := range r.Comparisons {
			p("    %s %s%s\n", checkMark(c, verdict.Held), c.String(), marginNote(c))
		}
	}
	if len(r.Incident) > 0 {
		against, said := "the write-up", "published"
		if r.Incident[0].Against != "" {
			against, said = "the "+r.Incident[0].Against, "measured there"
		}
		p("  against %s:\n", against)
		for _, row := range r.Incident {
			mark := "✓"
			if !row.Matches {
				mark = "✗"
			}
			p("    %s %s (%s): %s %s, simulated %s %s (band %s–%s)\n", mark, row.Metric, row.Variant, said, row.Published,
				verdict.FormatValue(float64(row.Simulated)), row.Unit, bound(float64(row.Low)), bound(float64(row.High)))
		}
	}
	for _, m := range r.Maps {
		p("  map: %s (%d runs, %.1f s)\n", m.Title, m.Runs, m.Seconds)
		for _, line := range strings.Split(strings.TrimRight(newMapView(m).Text, "\n"), "\n") {
			p("    %s\n", line)
		}
	}
	if r.Dir != "" {
		p("  report: %s\n", filepath.Join(r.Dir, "index.html"))
	}
	return b.String()
}

func checkMark(c verdict.Check, expect verdict.Verdict) string {
	switch {
	case c.Missing:
		return "?"
	case c.Held:
		return "✓"
	case expect == verdict.Violated:
		return "• broke, as expected:"
	}
	return "✗"
}

// marginNote is a check's margin for the console: " (1.3x over the
// threshold: a near miss)".
func marginNote(c verdict.Check) string {
	m := c.MarginText()
	if m == "" {
		return ""
	}
	if c.Near() {
		m += ": a near miss"
	}
	return " (" + m + ")"
}
