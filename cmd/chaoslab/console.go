package main

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/progress"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// logFile is the run's log, in its folder.
const logFile = "chaoslab.log"

// runConsole is what a person sees of a run: the progress display, phase
// changes and warnings on stderr, the detail in the run folder's log
// (on the console too with -v), and the closing summary.
type runConsole struct {
	con  *progress.Console
	logs *progress.Logs
	prev *slog.Logger
}

// newRunConsole takes over slog's default logger until close.
func newRunConsole(cmd *cobra.Command, format string) (*runConsole, error) {
	verbose, _ := cmd.Flags().GetBool("verbose")
	con := progress.NewConsole(os.Stderr)
	logs, err := progress.NewLogs(con, progress.LogOptions{Verbose: verbose, Format: format})
	if err != nil {
		return nil, errInput(err)
	}
	c := &runConsole{con: con, logs: logs, prev: slog.Default()}
	slog.SetDefault(logs.Logger)
	return c, nil
}

// hook makes the runner show its progress here and log to the run folder.
func (c *runConsole) hook(o *runner.Options) {
	o.Watch, o.OnDir, o.Logger = c.con, c.openLog, c.logs.Logger
}

func (c *runConsole) openLog(dir string) {
	path := filepath.Join(dir, logFile)
	if err := c.logs.Open(path); err != nil {
		slog.Warn("the run's detail stays off the log file", "err", err)
		return
	}
	c.con.Println("run folder " + relPath(dir) + " (the detail is in " + logFile + ")")
}

// done ends the progress display and the log file of one run.
func (c *runConsole) done() {
	c.con.Clear()
	_ = c.logs.Close()
}

// close gives slog's default logger back.
func (c *runConsole) close() {
	c.done()
	slog.SetDefault(c.prev)
}

// closingSummary is a run's outcome for a person: a sentence, a line per
// variant with its verdict marked as expected or not, the comparisons,
// the report and the run folder with its size.
func closingSummary(r *reports.Report) string {
	var b strings.Builder
	fmt.Fprintln(&b, headline(r))
	width := 0
	for _, v := range r.Variants {
		width = max(width, len(v.Name))
	}
	for _, v := range r.Variants {
		fmt.Fprintf(&b, "  %s %-*s  %-9s %s%s\n", expectMark(v), width, v.Name, v.Verdict, expectation(v), tally(v))
	}
	for _, c := range comparisons(r) {
		mark, state := "✓", "held"
		if !c.Held {
			mark, state = "✗", "failed"
		}
		fmt.Fprintf(&b, "  %s comparison %s %s (%s, want %s %s)\n", mark, c.ID, state,
			verdict.FormatValue(float64(c.Observed)), c.Op, verdict.FormatValue(c.Threshold))
	}
	if d := r.EndedAt.Sub(r.StartedAt); d > 0 {
		fmt.Fprintf(&b, "took %s on the %s placement%s\n", progress.Clock(d), r.Backend, parens(r.BackendWhy))
	}
	fmt.Fprintf(&b, "report: %s\n", relPath(filepath.Join(r.Dir, "index.html")))
	fmt.Fprintf(&b, "run folder: %s, %s on disk\n", relPath(r.Dir), humanBytes(diskUsage(r.Dir)))
	return b.String()
}

// comparisons are the run's comparisons, none when it was aborted (they
// have nothing to compare).
func comparisons(r *reports.Report) []verdict.Check {
	if r.Verdict == verdict.Aborted {
		return nil
	}
	return r.Comparisons
}

// headline is the run's outcome as one sentence.
func headline(r *reports.Report) string {
	name := r.Case.ID
	if name == "" {
		name = reportScenario(r)
	}
	switch r.Verdict {
	case verdict.Aborted, verdict.Inconclusive:
		return fmt.Sprintf("%s %s: %s.", name, r.Verdict, strings.TrimSuffix(r.Reason, "."))
	}
	if len(r.Variants) == 1 {
		return alone(name, r.Variants[0])
	}
	var clauses, missed, asExpected []string
	for _, v := range r.Variants {
		clauses = append(clauses, "the "+v.Name+" "+v.Noun[1]+" "+outcomeOf(v))
		if v.Expect != "" && v.Verdict != v.Expect {
			missed = append(missed, strings.TrimSuffix(alone(name, v), "."))
		} else {
			asExpected = append(asExpected, v.Name+" "+verb(v.Verdict))
		}
	}
	if len(missed) > 0 {
		// The variants that missed lead (a user's client among the
		// references): they are why the run failed.
		s := strings.Join(missed, "; ")
		if len(asExpected) > 0 {
			s += "; as expected, " + joinAnd(asExpected)
		}
		return s + "."
	}
	return fmt.Sprintf("%s reproduced: %s.", name, joinAnd(clauses))
}

// alone is the sentence of a one-variant run (a user's client).
func alone(name string, v *reports.VariantResult) string {
	s := fmt.Sprintf("%s %s under %s", v.Name, outcomeOf(v), name)
	if v.Expect != "" && v.Verdict != v.Expect {
		s += ", expected to " + v.Expect.Infinitive()
	}
	return s + "."
}

// outcomeOf is what a variant did: held, or broke and how (the first
// hypotheses it violated, with what was measured).
func outcomeOf(v *reports.VariantResult) string {
	if v.Verdict != verdict.Violated {
		return verb(v.Verdict)
	}
	var broke []string
	for _, c := range v.Hypotheses {
		if !c.Held && !c.Missing {
			broke = append(broke, fmt.Sprintf("%s = %s", c.Metric, verdict.FormatValue(float64(c.Observed))))
		}
	}
	if len(broke) > 2 {
		broke = append(broke[:2], "…")
	}
	if len(broke) == 0 {
		return "broke"
	}
	return "broke (" + strings.Join(broke, ", ") + ")"
}

// verb is what a variant did, in the past.
func verb(v verdict.Verdict) string {
	if v == verdict.Violated {
		return "broke"
	}
	return string(v)
}

// expectMark says whether a variant did what the scenario expects of it
// (a vulnerable variant that violated, as expected, is a success).
func expectMark(v *reports.VariantResult) string {
	if v.Expect == "" || v.Verdict == v.Expect {
		return "✓"
	}
	return "✗"
}

func expectation(v *reports.VariantResult) string {
	switch {
	case v.Expect == "":
		return ""
	case v.Verdict == v.Expect:
		return "as expected"
	}
	return "unexpected: expected " + string(v.Expect)
}

// tally counts a variant's hypotheses by what they showed.
func tally(v *reports.VariantResult) string {
	held, broke := 0, 0
	for _, c := range v.Hypotheses {
		switch {
		case c.Held:
			held++
		case !c.Missing:
			broke++
		}
	}
	n := len(v.Hypotheses)
	switch {
	case n == 0:
		return ""
	case broke > 0:
		return fmt.Sprintf(" (%d of %d hypotheses violated)", broke, n)
	case held == n:
		return fmt.Sprintf(" (all %d hypotheses held)", n)
	}
	return fmt.Sprintf(" (%d of %d hypotheses held)", held, n)
}

func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// relPath is path relative to the working directory when it is below it.
func relPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// diskUsage is the space dir takes on disk (du's count of blocks).
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
