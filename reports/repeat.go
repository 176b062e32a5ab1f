package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Repeat is what N runs of one scenario showed: per variant, the rate at
// which it reached its expected verdict, with a 95% Wilson interval.
type Repeat struct {
	Schema   string       `json:"schema"`
	Scenario string       `json:"scenario"`
	Seeds    []int64      `json:"seeds"`
	Runs     []string     `json:"runs"` // the runs' folders, relative to the summary
	Variants []RepeatRate `json:"variants"`
	Met      int          `json:"expectation_met"`
	Started  time.Time    `json:"started_at"`
	Ended    time.Time    `json:"ended_at"`
	Dir      string       `json:"-"`
	Reports  []*Report    `json:"-"`
}

// RepeatRate is one variant over the runs.
type RepeatRate struct {
	Variant string  `json:"variant"`
	Expect  string  `json:"expect"`
	Runs    int     `json:"runs"`
	Reached int     `json:"reached"`
	Rate    float64 `json:"rate"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
}

// Wilson is the 95% Wilson score interval of k successes in n trials.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959964
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, center-half), math.Min(1, center+half)
}

// NewRepeat sums up runs of one scenario.
func NewRepeat(scenario string, runs []*Report) *Repeat {
	rep := &Repeat{Schema: "chaoslab.repeat/v1", Scenario: scenario, Reports: runs}
	byName := map[string]*RepeatRate{}
	var order []string
	for _, r := range runs {
		rep.Seeds = append(rep.Seeds, r.Seed)
		if r.ExpectationMet {
			rep.Met++
		}
		if rep.Started.IsZero() || r.StartedAt.Before(rep.Started) {
			rep.Started = r.StartedAt
		}
		rep.Ended = r.EndedAt
		for _, v := range r.Variants {
			rr := byName[v.Name]
			if rr == nil {
				rr = &RepeatRate{Variant: v.Name, Expect: string(v.Expect)}
				byName[v.Name] = rr
				order = append(order, v.Name)
			}
			rr.Runs++
			if v.Verdict == v.Expect {
				rr.Reached++
			}
		}
	}
	for _, name := range order {
		rr := byName[name]
		rr.Rate = float64(rr.Reached) / float64(rr.Runs)
		rr.Low, rr.High = Wilson(rr.Reached, rr.Runs)
		rep.Variants = append(rep.Variants, *rr)
	}
	return rep
}

// Text is the summary a console shows.
func (rep *Repeat) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d runs, expectation met in %d\n", rep.Scenario, len(rep.Reports), rep.Met)
	for _, v := range rep.Variants {
		fmt.Fprintf(&b, "  %-24s reached %-9s %d/%d = %3.0f%%  (95%% interval %3.0f%%-%3.0f%%)\n", v.Variant, v.Expect, v.Reached, v.Runs, 100*v.Rate, 100*v.Low, 100*v.High)
	}
	return b.String()
}

// WriteRepeat writes report.json, report.md and index.html of the summary
// into dir; the runs' own folders are below it.
func WriteRepeat(rep *Repeat, dir string) error {
	rep.Dir = dir
	for _, r := range rep.Reports {
		rel, err := filepath.Rel(dir, r.Dir)
		if err != nil {
			rel = r.Dir
		}
		rep.Runs = append(rep.Runs, rel)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write repeat: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		return fmt.Errorf("write repeat: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(rep.markdown()), 0o644); err != nil {
		return fmt.Errorf("write repeat: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "index.html"), []byte(rep.html()), 0o644)
}

func (rep *Repeat) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %d runs\n\nExpectation met in %d of %d runs (seeds %v).\n\n| variant | expected | reached | rate | 95%% interval |\n|---|---|---|---|---|\n", rep.Scenario, len(rep.Runs), rep.Met, len(rep.Runs), rep.Seeds)
	for _, v := range rep.Variants {
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %.0f%% | %.0f%%-%.0f%% |\n", v.Variant, v.Expect, v.Reached, v.Runs, 100*v.Rate, 100*v.Low, 100*v.High)
	}
	b.WriteString("\n## Runs\n\n")
	for i, r := range rep.Runs {
		fmt.Fprintf(&b, "- seed %d: `%s`, %s\n", rep.Seeds[i], r, rep.Reports[i].Verdict)
	}
	return b.String()
}
