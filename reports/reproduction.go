package reports

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/verdict"
)

// KeptRun is what a reproduction table keeps of one run: enough to count
// it and to give its margins, small enough to keep in the repository
// (docs/reproduction/runs.jsonl) so that runs of several sessions add up.
type KeptRun struct {
	RunID     string `json:"run_id"`
	Scenario  string `json:"scenario"`
	Size      string `json:"size,omitempty"`
	Placement string `json:"placement"`
	// Digest identifies the scenario's text as run: runs of an edited
	// scenario are not counted with the runs of the one before.
	Digest    string          `json:"scenario_digest"`
	Seed      int64           `json:"seed"`
	Commit    string          `json:"commit,omitempty"`
	StartedAt time.Time       `json:"started_at"`
	WallS     float64         `json:"wall_s"`
	Verdict   verdict.Verdict `json:"verdict"`
	Met       bool            `json:"expectation_met"`
	Reason    string          `json:"reason,omitempty"`
	// LabFailed is set when the lab itself failed in a variant (a server
	// that did not start, an engine that refused): the run says nothing
	// of the incident, and is listed apart, not counted.
	LabFailed string       `json:"lab_failed,omitempty"`
	Figures   []KeptFigure `json:"figures"`
}

// labFailure is why the lab failed in the run, "" when it did not (runs
// kept before LabFailed say so in their reason). A fault that did not
// land (the lab could not deliver it as the scenario asked, e.g. an
// all-at-once restart the engine paced) counts as such: the run measured
// nothing of the incident's fault.
func (k KeptRun) labFailure() string {
	if k.LabFailed == "" && k.Verdict == verdict.Inconclusive &&
		(strings.Contains(k.Reason, "the lab failed") || strings.Contains(k.Reason, " did not land")) {
		return k.Reason
	}
	return k.LabFailed
}

// KeptFigure is one judged figure of a run: a hypothesis of a variant
// (Variant set) or a comparison across variants.
type KeptFigure struct {
	Variant string `json:"variant,omitempty"`
	// Expect is what the variant was expected to reach.
	Expect    verdict.Verdict `json:"expect,omitempty"`
	Check     string          `json:"check"`
	Metric    string          `json:"metric"`
	Op        string          `json:"op"`
	Threshold float64         `json:"threshold"`
	Observed  verdict.Float   `json:"observed"`
	Missing   bool            `json:"missing,omitempty"`
	Held      bool            `json:"held"`
	// Best is the best value the metric can take (a share's 1): a figure
	// held there is no near miss, however near its bound.
	Best *verdict.Float `json:"best,omitempty"`
}

// Factor is how far the figure lay from its threshold (>= 1; 0 when no
// factor means anything: missing, never, zero).
func (f KeptFigure) Factor() float64 {
	c := verdict.Check{Threshold: f.Threshold, Observed: f.Observed, Missing: f.Missing, Best: f.Best}
	x, ok := c.Margin()
	if !ok {
		return 0
	}
	return x
}

// Keep makes the kept form of a run's record.
func Keep(r *Report) KeptRun {
	k := KeptRun{RunID: r.RunID, Seed: r.Seed, Placement: r.Backend, StartedAt: r.StartedAt,
		Verdict: r.Verdict, Met: r.ExpectationMet, Reason: r.Reason, Commit: shortCommit(r.Versions["chaoslab"])}
	if r.Scenario != nil {
		k.Scenario, k.Size = r.Scenario.ID, r.Scenario.Size
	}
	k.Digest = RunDigest([]byte(r.ScenarioYAML), k.Size)
	if !r.EndedAt.IsZero() {
		k.WallS = math.Round(r.EndedAt.Sub(r.StartedAt).Seconds())
	}
	for _, v := range r.Variants {
		for _, c := range v.Hypotheses {
			k.Figures = append(k.Figures, keptFigure(v.Name, v.Expect, c))
		}
		if v.LabError != "" && k.LabFailed == "" {
			k.LabFailed = "variant " + v.Name + ": " + v.LabError
		}
	}
	for _, c := range r.Comparisons {
		k.Figures = append(k.Figures, keptFigure("", "", c))
	}
	return k
}

func keptFigure(variant string, expect verdict.Verdict, c verdict.Check) KeptFigure {
	return KeptFigure{Variant: variant, Expect: expect, Check: c.ID, Metric: c.Metric, Op: c.Op,
		Threshold: c.Threshold, Observed: c.Observed, Missing: c.Missing, Held: c.Held, Best: c.Best}
}

// FindRuns loads every run record (report.json of a harness run) under
// the roots; summaries of repeats, simulations and files that are not
// run records are passed over.
func FindRuns(roots ...string) ([]KeptRun, error) {
	var out []KeptRun
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "report.json" {
				return err
			}
			r, err := record.Load(path)
			if err != nil || r.Backend == "sim" || r.Debrief != nil {
				return nil // a repeat's summary, a simulation, a training session
			}
			out = append(out, Keep(r))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("find runs: %w", err)
		}
	}
	return out, nil
}

// ReadKept reads a kept-runs file (one JSON object a line); a missing
// file holds no runs.
func ReadKept(path string) ([]KeptRun, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read kept runs: %w", err)
	}
	defer f.Close()
	var out []KeptRun
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var k KeptRun
		if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
			return nil, fmt.Errorf("read kept runs: %s:%d: %w", path, line, err)
		}
		out = append(out, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kept runs: %w", err)
	}
	return out, nil
}

// MergeKept adds the runs not kept yet (by run id) and orders all by
// scenario, placement and start.
func MergeKept(kept, more []KeptRun) []KeptRun {
	seen := map[string]bool{}
	for _, k := range kept {
		seen[k.RunID] = true
	}
	for _, k := range more {
		if !seen[k.RunID] {
			kept, seen[k.RunID] = append(kept, k), true
		}
	}
	slices.SortStableFunc(kept, func(a, b KeptRun) int {
		if c := strings.Compare(a.Scenario+"\x00"+a.Placement, b.Scenario+"\x00"+b.Placement); c != 0 {
			return c
		}
		return a.StartedAt.Compare(b.StartedAt)
	})
	return kept
}

// WriteKept writes the kept runs, one JSON object a line.
func WriteKept(path string, kept []KeptRun) error {
	var b strings.Builder
	for _, k := range kept {
		line, err := json.Marshal(k)
		if err != nil {
			return fmt.Errorf("write kept runs: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write kept runs: %w", err)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// RateGroup is one scenario at one size on one placement: its runs of
// the scenario's latest text and how often they reproduced.
type RateGroup struct {
	Scenario, Size, Placement string
	Runs                      []KeptRun
	// Stale counts runs of an earlier text of the scenario, not counted;
	// Aborted lists runs interrupted before they could be judged (they
	// measured nothing of the system), not counted either.
	Stale   int
	Aborted []KeptRun
	// LabFailed lists runs in which the lab itself failed: not counted.
	LabFailed []KeptRun
	// Unproven lists runs judged before the proof that one of the
	// scenario's faults landed was made stricter, or before its
	// workload's program was mended (UnprovenWhy): their verdicts rest on
	// the weaker proof or the defect, so they are not counted.
	Unproven    []KeptRun
	UnprovenWhy Revision
	Reproduced  int
	Low, High   float64
	Figures     []FigureSpread
}

// A Revision is when the proof that one of a scenario's faults landed
// was made stricter, and what it proves since (faults.Revised), or when
// its workload's program was mended, and what was (lab.Mended).
type Revision struct {
	Scenario string
	Since    time.Time
	What     string
}

// FigureSpread is one judged figure over a group's runs.
type FigureSpread struct {
	Variant, Check, Metric, Op string
	Threshold                  float64
	Held, Runs                 int
	// Deciding: the figure decided its variant in some run (every figure
	// of a variant expected to hold, the strongest break of a variant
	// expected to break, every comparison).
	Deciding         bool
	DecidingRuns     int       // runs in which it decided
	Observed         []float64 // sorted
	Factors          []float64 // sorted; runs without a factor left out
	NoFactor         int       // runs whose figure has no factor (never, missing, 0)
	SmallestDeciding float64   // smallest factor among deciding runs (0: none)
}

// Digest identifies a scenario's text byte for byte: what runs kept
// before 2026-12-06 were identified by (RunDigest since).
func Digest(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:6])
}

// RunDigest identifies what a run at size ran of a scenario's text
// (KeptRun.Digest): its fields as parsed, without comments, layout or
// the sizes it did not run, so that editing a comment or the ci size
// leaves the kept full-size runs counted. A text that does not parse is
// identified byte for byte.
func RunDigest(src []byte, size string) string {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil || doc == nil {
		return Digest(src)
	}
	sizes, _ := doc["sizes"].(map[string]any)
	delete(doc, "sizes")
	if sz, ok := sizes[size]; ok && size != "" && size != "full" {
		doc["sizes"] = map[string]any{size: sz}
	}
	b, err := json.Marshal(doc) // map keys sorted
	if err != nil {
		return Digest(src)
	}
	sum := sha256.Sum256(b)
	return "r" + hex.EncodeToString(sum[:6])
}

// Texts are the scenarios' texts as this chaoslab has them, by id: only
// runs of a scenario's current text are counted.
type Texts map[string][]byte

// digests are what a run of scenario id at size may carry to count with
// the current text: its RunDigest, or (runs kept before RunDigest) the
// digest of the whole text.
func (t Texts) digests(id, size string) ([]string, bool) {
	src, ok := t[id]
	if !ok {
		return nil, false
	}
	return []string{RunDigest(src, size), Digest(src)}, true
}

// UpgradeDigests gives each kept run of a current text identified byte for
// byte its RunDigest, so that it stays counted when a comment or another
// size of the scenario is edited; it returns how many it changed.
func UpgradeDigests(kept []KeptRun, texts Texts) int {
	n := 0
	for i, k := range kept {
		if src, ok := texts[k.Scenario]; ok && k.Digest == Digest(src) {
			kept[i].Digest = RunDigest(src, k.Size)
			n++
		}
	}
	return n
}

// Rates groups kept runs by scenario, size and placement. current gives
// the digest of each scenario's text as it is now (by id): only runs of
// that text count; a scenario not in it counts the runs of its latest
// run's text.
func Rates(kept []KeptRun, current Texts, revised ...Revision) []*RateGroup {
	since := map[string]Revision{}
	for _, r := range revised {
		if r.Since.After(since[r.Scenario].Since) {
			since[r.Scenario] = r
		}
	}
	byKey := map[string]*RateGroup{}
	var order []string
	latest := map[string]KeptRun{}
	for _, k := range kept {
		key := k.Scenario + "\x00" + k.Size + "\x00" + k.Placement
		if g := byKey[key]; g == nil {
			byKey[key] = &RateGroup{Scenario: k.Scenario, Size: k.Size, Placement: k.Placement}
			order = append(order, key)
		}
		if l, ok := latest[key]; !ok || k.StartedAt.After(l.StartedAt) {
			latest[key] = k
		}
	}
	var out []*RateGroup
	for _, key := range order {
		g := byKey[key]
		for _, k := range kept {
			if k.Scenario+"\x00"+k.Size+"\x00"+k.Placement != key {
				continue
			}
			want := []string{latest[key].Digest}
			if d, ok := current.digests(k.Scenario, k.Size); ok {
				want = d
			}
			if !slices.Contains(want, k.Digest) {
				g.Stale++
				continue
			}
			if r, ok := since[k.Scenario]; ok && k.StartedAt.Before(r.Since) {
				g.Unproven, g.UnprovenWhy = append(g.Unproven, k), r
				continue
			}
			if k.Verdict == verdict.Aborted {
				g.Aborted = append(g.Aborted, k)
				continue
			}
			if k.labFailure() != "" {
				g.LabFailed = append(g.LabFailed, k)
				continue
			}
			g.Runs = append(g.Runs, k)
			if k.Verdict == verdict.Reproduced && k.Met {
				g.Reproduced++
			}
		}
		g.Low, g.High = Wilson(g.Reproduced, len(g.Runs))
		g.Figures = spreads(g.Runs)
		out = append(out, g)
	}
	return out
}

func spreads(runs []KeptRun) []FigureSpread {
	byKey := map[string]*FigureSpread{}
	var order []string
	for _, k := range runs {
		breaks := decidingBreaks(k.Figures)
		for i, f := range k.Figures {
			key := f.Variant + "\x00" + f.Check
			s := byKey[key]
			if s == nil {
				s = &FigureSpread{Variant: f.Variant, Check: f.Check, Metric: f.Metric, Op: f.Op, Threshold: f.Threshold}
				byKey[key] = s
				order = append(order, key)
			}
			s.Runs++
			if f.Held {
				s.Held++
			}
			deciding := f.Variant == "" || f.Expect != verdict.Violated || breaks[i]
			s.Deciding = s.Deciding || deciding
			if deciding {
				s.DecidingRuns++
			}
			s.Observed = append(s.Observed, float64(f.Observed))
			x := f.Factor()
			if x == 0 {
				s.NoFactor++
				continue
			}
			s.Factors = append(s.Factors, x)
			if deciding && (s.SmallestDeciding == 0 || x < s.SmallestDeciding) {
				s.SmallestDeciding = x
			}
		}
	}
	out := make([]FigureSpread, 0, len(order))
	for _, key := range order {
		s := byKey[key]
		slices.Sort(s.Observed)
		slices.Sort(s.Factors)
		out = append(out, *s)
	}
	return out
}

// decidingBreaks marks, in each variant expected to break, the figure
// that broke it most clearly: a variant breaks when any hypothesis does,
// so its verdict turns only when its strongest break does. A broken
// figure with no factor (a count against none allowed, a time never
// reached) is the strongest; else the largest factor.
func decidingBreaks(fs []KeptFigure) map[int]bool {
	best := map[string]int{}
	score := func(f KeptFigure) float64 {
		if x := f.Factor(); x > 0 {
			return x
		}
		return math.Inf(1)
	}
	for i, f := range fs {
		if f.Variant == "" || f.Expect != verdict.Violated || f.Held || f.Missing {
			continue
		}
		if j, ok := best[f.Variant]; !ok || score(f) > score(fs[j]) {
			best[f.Variant] = i
		}
	}
	out := map[int]bool{}
	for _, i := range best {
		out[i] = true
	}
	return out
}

// Close says whether a deciding figure came within factor of its
// threshold in some run.
func (s FigureSpread) Close(factor float64) bool {
	return s.Deciding && s.SmallestDeciding > 0 && s.SmallestDeciding < factor
}

// median of sorted values (NaN for none).
func median(xs []float64) float64 {
	n := len(xs)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// shortCommit shortens a revision to 12 hex digits, keeping a note such
// as " (with uncommitted changes)".
func shortCommit(v string) string {
	rev, note, _ := strings.Cut(v, " ")
	if len(rev) == 40 {
		rev = rev[:12]
	}
	return strings.TrimSpace(rev + " " + note)
}
