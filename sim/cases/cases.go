// Package cases binds the incident models of sim/ to their case records and
// scenarios, runs them at a chosen scale, sweeps their triggers into
// metastability maps, and turns the result into a report of the same kind
// as a harness run (reports.Report, backend "sim").
package cases

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/sim"
	"github.com/chaoslab/chaoslab/verdict"
)

// Scales a case can be run at.
const (
	// ScaleIncident is the incident's own scale (thousands of servers,
	// hours), compared with the numbers the write-up publishes.
	ScaleIncident = "incident"
	// ScaleHarness is the scale of the harness scenario, to compare with a
	// harness run of the same scenario (with --calibrate, from its report).
	ScaleHarness = "harness"
)

// Case is one incident's model as `chaoslab sim` runs it.
type Case struct {
	ID       string   // e.g. il-0587: the case record's id
	Aliases  []string // other names accepted, e.g. the harness scenario id
	Scenario string   // the harness scenario that replays the same case, if any
	Model    string   // the model's source file, e.g. sim/kinesis.go
	Title    string
	Scales   []string // the scales it can run at; the first is the default

	// Variants returns the variants to run at o.Scale.
	Variants func(o Options) ([]Variant, error)
	// Hypotheses judge each variant's metrics at a scale; Expect is the
	// verdict each variant should get, Comparisons are checked across them.
	Hypotheses func(scale string) []scenarios.Hypothesis
	Expect     map[string]verdict.Verdict
	// ExpectAt, when set, replaces Expect with the verdicts expected at a
	// scale (a variant can hold at one scale and break at another).
	ExpectAt    func(scale string) map[string]verdict.Verdict
	Comparisons func(scale string) []scenarios.Comparison
	// Incident compares the runs with the write-up's numbers at the
	// incident's scale (or, for a calibrated run, with its harness run).
	Incident func(res map[string]sim.Result) []reports.IncidentRow
	// Sweeps are the metastability maps --sweep draws.
	Sweeps func(o Options) []Sweep
	// Responders says, at a scale, which of the responders' actions the
	// model replays and from where; nil or "" for none, and the report
	// then says that its comparison is of the untreated system.
	Responders func(scale string) string
}

// Ref is the case's id as its record spells it and `chaoslab list` prints
// it (IL-0587; ID is the model's, il-0587).
func (c *Case) Ref() string {
	if rec, err := seeds.Get(c.ID); err == nil {
		return rec.ID
	}
	return c.ID
}

// untreated is what a report says of a model that replays none of the
// responders' actions.
const untreated = "none: the model replays none of the responders' actions, so the comparison is of the untreated system"

// responders is c's statement on the responders' actions at scale.
func (c *Case) responders(scale string) string {
	if c.Responders == nil {
		return untreated
	}
	if s := c.Responders(scale); s != "" {
		return s
	}
	return untreated
}

// Variant is one set of model parameters.
type Variant struct {
	Name        string
	Description string
	Parameters  []reports.Parameter
	// Faults are the simulated trigger's windows (shaded in the charts).
	Faults []reports.FaultWindow
	// Responders says which of the responders' actions this variant
	// replays ("" for none: the untreated system).
	Responders string
	Run        func() sim.Result
}

// Sweep is a metastability map: Run is called for every (x, y) of the grid.
type Sweep struct {
	Title, Variant string
	XName, YName   string
	X, Y           []float64
	IncidentX      float64
	IncidentY      float64
	Note           string
	Run            func(x, y float64) sim.Result
}

// Options of a simulated run.
type Options struct {
	Scale string
	Seed  uint64
	// Calibrate is a harness report (folder or report.json) whose
	// scenario and measurements set the model's parameters (ScaleHarness).
	Calibrate string
	// Sweep draws the case's metastability maps.
	Sweep bool
	// Workers run sweep points in parallel (0: one per CPU).
	Workers int
	// Progress reports long work; nil for none.
	Progress func(msg string, args ...any)
	// Rerun is the command line recorded in the report.
	Rerun string
}

var registry []*Case

func register(c *Case) { registry = append(registry, c) }

// All returns the cases, by id.
func All() []*Case {
	out := append([]*Case(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Get finds a case by id or alias, in any case (IL-0587 or il-0587).
func Get(id string) (*Case, error) {
	var ids []string
	for _, c := range All() {
		if strings.EqualFold(c.ID, id) || (c.Scenario != "" && strings.EqualFold(c.Scenario, id)) {
			return c, nil
		}
		for _, a := range c.Aliases {
			if strings.EqualFold(a, id) {
				return c, nil
			}
		}
		ids = append(ids, c.Ref())
	}
	return nil, fmt.Errorf("find model %q: no such case (have %s)", id, strings.Join(ids, ", "))
}

// Run runs the case's variants (and sweeps) and returns the report; the
// caller writes it. A cancelled ctx gives a report marked aborted.
func Run(ctx context.Context, c *Case, o Options) (*reports.Report, error) {
	if o.Scale == "" {
		o.Scale = c.Scales[0]
	}
	if !contains(c.Scales, o.Scale) {
		return nil, fmt.Errorf("run model %s: scale %q: want one of %s", c.ID, o.Scale, strings.Join(c.Scales, ", "))
	}
	if o.Calibrate != "" && o.Scale != ScaleHarness {
		return nil, fmt.Errorf("run model %s: --calibrate goes with --scale %s", c.ID, ScaleHarness)
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	variants, err := c.Variants(o)
	if err != nil {
		return nil, fmt.Errorf("run model %s: %w", c.ID, err)
	}
	r := newReport(c, o)
	acts := c.responders(o.Scale)
	r.BackendWhy += "; the responders' actions: " + acts
	var hyps []scenarios.Hypothesis
	if c.Hypotheses != nil {
		hyps = c.Hypotheses(o.Scale)
	}
	expect := c.Expect
	if c.ExpectAt != nil {
		expect = c.ExpectAt(o.Scale)
	}
	results, outcomes, byVariant, done := runVariants(ctx, c, o, r, variants, hyps, expect)
	if !done {
		return aborted(r, context.Cause(ctx)), nil
	}
	if c.Comparisons != nil {
		for _, cmp := range c.Comparisons(o.Scale) {
			r.Comparisons = append(r.Comparisons, verdict.JudgeComparison(cmp, byVariant))
		}
	}
	if c.Incident != nil {
		r.Incident = c.Incident(results)
		for i := range r.Incident {
			if row := &r.Incident[i]; row.Against == "" && acts == untreated {
				row.Note = strings.TrimSpace(row.Note + " The untreated system: the model replays none of the responders' actions.")
			}
		}
	}
	if o.Sweep && c.Sweeps != nil {
		for _, sw := range c.Sweeps(o) {
			m, err := runSweep(ctx, sw, o)
			if err != nil {
				if ctx.Err() != nil {
					return aborted(r, context.Cause(ctx)), nil
				}
				return nil, err
			}
			r.Maps = append(r.Maps, m)
		}
	}
	r.Verdict, r.Reason = verdict.Scenario(outcomes, r.Comparisons)
	r.ExpectationMet = verdict.Met(outcomes, r.Comparisons)
	r.EndedAt = time.Now().UTC()
	return r, nil
}

// newReport is a simulated run's report head.
func newReport(c *Case, o Options) *reports.Report {
	r := &reports.Report{
		Schema: reports.SchemaVersion, RunID: fmt.Sprintf("%s-sim-%s-%s", c.ID, o.Scale, time.Now().UTC().Format("20060102T150405Z")),
		StartedAt: time.Now().UTC(), Case: reports.CaseRefFor(c.ID), Seed: int64(o.Seed), Backend: "sim",
		BackendWhy: fmt.Sprintf("discrete-event model %s at the %s's scale", c.Model, o.Scale),
		Host:       host(), Versions: map[string]string{"go": runtime.Version(), "model": c.Model},
		Rerun: o.Rerun,
	}
	if o.Calibrate != "" {
		r.BackendWhy += ", calibrated from " + o.Calibrate
	}
	if c.Scenario != "" {
		// The report does not carry the harness scenario: its hypotheses
		// are for the harness's scale, and the model's are stored with
		// each variant (reports.Report.Recheck judges those again).
		r.BackendWhy += "; the harness replays the same case as scenario " + c.Scenario
	}
	if r.Case.Title == "" {
		r.Case.Title = c.Title
	}
	return r
}

// runVariants runs each model variant and judges it, adding it to r; done
// is false when ctx ended first.
func runVariants(ctx context.Context, c *Case, o Options, r *reports.Report, variants []Variant, hyps []scenarios.Hypothesis,
	expect map[string]verdict.Verdict) (results map[string]sim.Result, outcomes []verdict.Outcome, byVariant map[string]map[string]float64, done bool) {
	results, byVariant = map[string]sim.Result{}, map[string]map[string]float64{}
	for _, v := range variants {
		if err := ctx.Err(); err != nil {
			return results, outcomes, byVariant, false
		}
		o.Progress("model variant starting", "case", c.ID, "variant", v.Name, "scale", o.Scale)
		start := time.Now()
		res, ok := runUnlessDone(ctx, v.Run)
		if !ok {
			return results, outcomes, byVariant, false
		}
		wall := time.Since(start)
		results[v.Name] = res
		vr := variantResult(v, res, wall)
		vr.Parameters = append(vr.Parameters, reports.Parameter{Name: "Responders' actions", Value: cmp.Or(v.Responders, untreated)})
		vr.Expect = expect[v.Name]
		vr.Hypotheses, vr.Verdict, vr.Reason = verdict.Hypotheses(hyps, res.Metrics)
		if vr.Expect == "" {
			vr.Expect = vr.Verdict
		}
		r.Variants = append(r.Variants, vr)
		outcomes = append(outcomes, verdict.Outcome{Variant: v.Name, Verdict: vr.Verdict, Expect: vr.Expect, Reason: vr.Reason})
		byVariant[v.Name] = res.Metrics
		o.Progress("model variant done", "variant", v.Name, "outcome", res.Outcome.String(), "verdict", vr.Verdict,
			"events", res.Events, "wall", wall.Round(time.Millisecond))
	}
	return results, outcomes, byVariant, true
}

// runUnlessDone runs a model and returns its result, or returns at once
// with ok false when ctx ends first. A model run cannot be stopped halfway:
// it is left to finish in the background, and the command exits anyway.
func runUnlessDone(ctx context.Context, run func() sim.Result) (sim.Result, bool) {
	done := make(chan sim.Result, 1)
	go func() { done <- run() }()
	select {
	case res := <-done:
		return res, true
	case <-ctx.Done():
		return sim.Result{}, false
	}
}

func aborted(r *reports.Report, cause error) *reports.Report {
	r.Verdict = verdict.Aborted
	r.Reason = "interrupted: " + cause.Error()
	r.EndedAt = time.Now().UTC()
	return r
}

func variantResult(v Variant, res sim.Result, wall time.Duration) *reports.VariantResult {
	vr := &reports.VariantResult{
		Name: v.Name, Description: v.Description, StartedAt: time.Now().UTC(), Parameters: v.Parameters,
		Faults: v.Faults,
	}
	vr.Metrics = map[string]verdict.Float{}
	for k, x := range res.Metrics {
		vr.Metrics[k] = verdict.Float(x)
	}
	vr.Metrics["sim.wall_s"] = verdict.Float(wall.Seconds())
	vr.Parameters = append(vr.Parameters,
		reports.Parameter{Name: "Outcome", Value: res.Outcome.String() + ": " + res.Why},
		reports.Parameter{Name: "Events simulated", Value: fmt.Sprintf("%d in %s (%.1f M/s)", res.Events, wall.Round(time.Millisecond), float64(res.Events)/wall.Seconds()/1e6)})
	for _, t := range res.Series {
		s := &reports.Series{Name: t.Name, Source: t.Source, Unit: t.Unit}
		for i := range t.T {
			s.Points = append(s.Points, reports.Point{T: t.T[i], V: verdict.Float(t.V[i])})
		}
		vr.Series = append(vr.Series, s)
	}
	vr.Events = append(vr.Events, reports.Event{Kind: "note", Source: "model", Detail: res.Outcome.String() + ": " + res.Why})
	return vr
}

// runSweep runs the grid on o.Workers goroutines (each model run is
// single-threaded and seeded, so the map does not depend on the order).
func runSweep(ctx context.Context, sw Sweep, o Options) (reports.Map, error) {
	m := reports.Map{Title: sw.Title, Variant: sw.Variant, XName: sw.XName, YName: sw.YName, X: sw.X, Y: sw.Y,
		IncidentX: sw.IncidentX, IncidentY: sw.IncidentY, Note: sw.Note}
	m.Outcomes = make([][]string, len(sw.Y))
	for j := range m.Outcomes {
		m.Outcomes[j] = make([]string, len(sw.X))
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	type point struct{ i, j int }
	pts := make(chan point)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, total := 0, len(sw.X)*len(sw.Y)
	start := time.Now()
	last := start
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range pts {
				res := sw.Run(sw.X[p.i], sw.Y[p.j])
				mu.Lock()
				m.Outcomes[p.j][p.i] = res.Outcome.String()
				done++
				if time.Since(last) > 5*time.Second || done == total {
					last = time.Now()
					o.Progress("sweep", "map", sw.Title, "done", fmt.Sprintf("%d/%d", done, total), "elapsed", time.Since(start).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
	var err error
feed:
	for j := range sw.Y {
		for i := range sw.X {
			select {
			case <-ctx.Done():
				err = context.Cause(ctx)
				break feed
			case pts <- point{i, j}:
			}
		}
	}
	close(pts)
	wg.Wait()
	m.Runs, m.Seconds = done, time.Since(start).Seconds()
	if err != nil {
		return m, fmt.Errorf("sweep %s: %w", sw.Title, err)
	}
	return m, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func host() reports.Host {
	h := reports.Host{OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	return h
}

// band is an IncidentRow whose agreement is lo <= x <= hi.
func band(row reports.IncidentRow, x, lo, hi float64) reports.IncidentRow {
	row.Simulated, row.Low, row.High = verdict.Float(x), verdict.Float(lo), verdict.Float(hi)
	row.Matches = !math.IsNaN(x) && x >= lo && x <= hi
	return row
}
