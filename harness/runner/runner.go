// Package runner replays a scenario on real servers, through one pipeline
// for every system, placement and workload kind: for each variant, system
// up, seed, workload up, warm-up, the fault timeline with health checked
// around every fault, observe, collect, verdict, report. It knows the
// plug-ins only by their interfaces (harness/lab).
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/progress"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// Options of one run.
type Options struct {
	// Variants to run, in order; empty means the scenario's default ones
	// (every variant, or those its size names).
	Variants []string
	// Size runs the scenario at one of its sizes (ci: the reduced size CI
	// replays); "" runs it as it is.
	Size string
	Seed int64
	// OutDir is the parent of the run folder (default out/runs).
	OutDir string
	// Placement: local (processes on this machine), docker (containers) or
	// auto (docker when an engine answers and the images are here, unless
	// the workload prefers another).
	Placement string
	// Images overrides the image of a system ("zookeeper", "client").
	Images map[string]string
	// AgentBinary runs chaoslab's agents as local processes (default: this
	// executable); AgentArgs come before "agent ..." (a test binary's flags).
	AgentBinary string
	AgentArgs   []string
	// Client, when set, is a user's client program run in place of the
	// workload's own, as a variant named after it (expected to hold);
	// WithReferences runs the scenario's own variants beside it.
	Client         *lab.ClientProgram
	WithReferences bool
	// Rerun is the command that replays the run (the placement chosen is
	// added to it), for the report.
	Rerun string
	// OnEvent, when set, is called for every timeline event as it happens
	// (faults, health checks, notes), e.g. to drive a game-day display.
	OnEvent func(variant string, e lab.Event)
	// Watch, when set, is told each variant's phase changes and, every
	// second, its status (the console's progress display).
	Watch progress.Watcher
	// Steer, when set, lets a facilitator hold, hurry, extend or end each
	// variant's timeline and operators take actions on it (gameday).
	Steer Steer
	// OnDir, when set, is called with the run folder once it exists
	// (to open the run's log file there).
	OnDir func(dir string)
	// KeepData keeps the servers' data directories in the run folder;
	// by default they are removed once the servers have stopped.
	KeepData bool
	Logger   *slog.Logger
}

// plan is what a run is made of, resolved before anything starts.
type plan struct {
	s     *scenarios.Scenario
	sys   lab.System
	kind  lab.Kind
	plc   lab.Placement
	why   string
	topos map[string]lab.Settings
	works map[string]lab.Settings
	// setup and tail are what a variant's servers' start and its
	// teardown took last, for the next variant's schedule.
	setup, tail time.Duration
	*aborter
	// journal is the run's journal (nil: none).
	journal *journal.Writer
}

// Run replays s and writes its report. The returned report is always
// written when the run got as far as creating its folder, also when ctx is
// cancelled or something panics (verdict aborted); err is for failures of
// the lab itself, a panic included.
func Run(ctx context.Context, s *scenarios.Scenario, o Options) (rep *reports.Report, err error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join("out", "runs")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a := &aborter{cancel: cancel, log: o.Logger}
	defer func() {
		if x := recover(); x != nil {
			err = a.panicked("the run", x)
			rep = nil
		}
	}()
	s, err = s.Sized(o.Size)
	if err != nil {
		return nil, err
	}
	s, src, err := withClient(s, &o)
	if err != nil {
		return nil, err
	}
	if len(o.Variants) == 0 {
		o.Variants = s.DefaultVariants()
	}
	sweepJournals(ctx, o.OutDir, o.Logger)
	p, err := newPlan(ctx, s, &o)
	if err != nil {
		return nil, err
	}
	p.aborter = a
	start := time.Now()
	runID := fmt.Sprintf("%s-%s", s.ID, start.UTC().Format("20060102T150405Z"))
	dir, err := filepath.Abs(filepath.Join(o.OutDir, runID))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	if o.OnDir != nil {
		o.OnDir(dir)
	}
	r := newReport(s, p, o, runID, start)
	if src != nil {
		r.ScenarioYAML = string(src)
	}
	p.journal = openJournal(dir, r, o.Variants, o.Logger)
	defer closeJournal(p.journal, dir, o.Logger)
	defer func() {
		if x := recover(); x != nil {
			rep, err = r, errors.Join(err, a.panicked("the run", x), writeAborted(r, dir))
		}
	}()
	return r, p.execute(ctx, r, o, dir)
}

// execute prepares the placement and the system, runs the variants and
// writes the report.
func (p *plan) execute(ctx context.Context, r *reports.Report, o Options, dir string) error {
	log := o.Logger
	log.Info("run starting", "run", r.RunID, "scenario", p.s.ID, "variants", o.Variants, "seed", o.Seed, "dir", dir,
		"placement", p.plc.Name(), "per_variant", p.s.RunLength().String())
	if p.why != "" {
		log.Info("placement", "placement", p.plc.Name(), "why", p.why)
	}
	if err := p.prepare(ctx, log); err != nil {
		return err
	}
	runErr := p.variants(ctx, r, o, dir, log)
	for k, v := range p.plc.Versions() {
		r.Versions[k] = v
	}
	if w := p.plc.Why(); w != "" {
		r.BackendWhy = strings.TrimPrefix(r.BackendWhy+"; "+w, "; ")
	}
	r.EndedAt = time.Now()
	if _, _, err := r.Recheck(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	runErr = errors.Join(runErr, panicOf(ctx))
	if err := reports.Write(r, dir); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

// writeAborted writes the report of a run a panic cut short outside its
// variants: every variant without a verdict is aborted.
func writeAborted(r *reports.Report, dir string) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("write aborted report: panic: %v", x)
		}
	}()
	for _, v := range r.Variants {
		if v.Verdict == "" {
			v.Verdict, v.Reason = verdict.Aborted, "aborted: the run panicked"
		}
	}
	r.EndedAt = time.Now()
	_, _, _ = r.Recheck()
	if r.Verdict != verdict.Aborted {
		r.Verdict, r.Reason, r.ExpectationMet = verdict.Aborted, "aborted: the run panicked", false
	}
	return reports.Write(r, dir)
}

// variants runs each variant in turn on fresh servers.
func (p *plan) variants(ctx context.Context, r *reports.Report, o Options, dir string, log *slog.Logger) error {
	var runErr error
	for i, name := range o.Variants {
		vr := &reports.VariantResult{Name: name, Description: p.s.Variants[name].Description,
			Expect: verdict.Verdict(p.s.Expect[name]), Noun: nouns(p.kind)}
		vr.Workload = lab.Encode(map[string]any{"kind": p.kind.Name(), "settings": p.works[name]})
		vr.Topology = lab.Encode(p.topos[name])
		vr.Facts = facts(p.topos[name], p.works[name])
		r.Variants = append(r.Variants, vr)
		if ctx.Err() != nil {
			vr.Verdict, vr.Reason = verdict.Aborted, "not started: "+abortReason(ctx)
			continue
		}
		v := p.newVariant(vr, o, i, dir, log)
		p.journalVariant(vr, false)
		log.Info("variant starting", "variant", name, "of", fmt.Sprintf("%d/%d", i+1, len(o.Variants)))
		err := v.guarded(ctx)
		switch {
		case ctx.Err() != nil:
			vr.Verdict, vr.Reason = verdict.Aborted, abortReason(ctx)
		case err != nil:
			vr.LabError = err.Error()
			vr.Verdict, vr.Reason = verdict.Inconclusive, "the lab failed: "+err.Error()
			runErr = errors.Join(runErr, fmt.Errorf("variant %s: %w", name, err))
		}
		if v.version != "" {
			r.Versions[p.sys.Name()] = v.version
		}
		vr.LogDir = name + "/logs"
		p.measured(vr.Timing)
		p.journalVariant(vr, true)
		log.Info("variant done", "variant", name, "verdict_inputs", shortMetrics(vr.Metrics, p.s))
	}
	return runErr
}

// newVariant is the i-th variant of the run, scheduled with what the
// variants before it took.
func (p *plan) newVariant(vr *reports.VariantResult, o Options, i int, dir string, log *slog.Logger) *variant {
	name := vr.Name
	v := &variant{p: p, name: name, vr: vr, o: o, index: i, of: len(o.Variants),
		seed: uint64(o.Seed + int64(i)*7919), dir: filepath.Join(dir, name),
		runID: variantRunID(p.s.ID, name, time.Now()), log: log.With("variant", name)}
	v.sched = schedule{length: p.s.RunLengthFor(name), warm: p.s.Timeline.Warmup.D(), setup: setupGuess, tail: tailGuess}
	if p.setup > 0 {
		v.sched.setup, v.sched.tail = p.setup, p.tail
	}
	return v
}

// measured keeps what a variant's setup and teardown took.
func (p *plan) measured(t reports.Timing) {
	if t.SetupS > 0 {
		p.setup = time.Duration(t.SetupS * float64(time.Second))
		p.tail = time.Duration(t.TeardownS * float64(time.Second))
	}
}

// guarded runs the variant; a panic in its pipeline (the runner's or a
// plug-in's, on this goroutine) is recovered once the variant's deferred
// cleanup ran, and aborts the run.
func (v *variant) guarded(ctx context.Context) (err error) {
	defer func() {
		if x := recover(); x != nil {
			err = v.p.panicked("variant "+v.name, x)
		}
	}()
	return v.run(ctx)
}

// withClient adds the user's client to the scenario as a variant, and
// chooses the variants: the client's, with the scenario's own as
// references when asked. src is the scenario's text with the variant.
func withClient(s *scenarios.Scenario, o *Options) (*scenarios.Scenario, []byte, error) {
	if o.Client == nil {
		return s, nil, nil
	}
	st, err := s.WorkloadFor(s.VariantNames()[0])
	if err != nil {
		return nil, nil, err
	}
	if _, ok := st.(lab.ClientHost); !ok {
		return nil, nil, fmt.Errorf("run scenario: the %s workload has no client of its own for yours to replace", s.Kind())
	}
	text, err := readSource(s.Source)
	if err != nil {
		return nil, nil, fmt.Errorf("run scenario: read %s: %w", s.Source, err)
	}
	s2, name, src, err := scenarios.WithClient(s, text, *o.Client)
	if errors.Is(err, scenarios.ErrNothingJudged) {
		if alt := scenarios.ClientScenarios("examples", s.Case); len(alt) > 0 {
			err = fmt.Errorf("%w; to judge a client under %s, run %s", err, s.Case, strings.Join(alt, " or "))
		}
	}
	if err != nil {
		return nil, nil, err
	}
	o.Variants = []string{name}
	if o.WithReferences {
		o.Variants = append(s.DefaultVariants(), name)
	}
	return s2, src, nil
}

// variantRunID names a variant's cgroups, containers and networks:
// scenario, variant and time, with the scenario's id shortened so that the
// whole fits the engine's 63 characters.
func variantRunID(scenario, variant string, t time.Time) string {
	tail := fmt.Sprintf("-%s-%d", variant, t.Unix())
	if room := 63 - len(tail); len(scenario) > room {
		scenario = strings.TrimRight(scenario[:max(room, 8)], "-")
	}
	return scenario + tail
}

// newReport is the report's head: scenario, seed, host, versions, charts.
func newReport(s *scenarios.Scenario, p *plan, o Options, runID string, start time.Time) *reports.Report {
	r := &reports.Report{
		Backend: p.plc.Name(), BackendWhy: p.why, Schema: reports.SchemaVersion, RunID: runID, StartedAt: start,
		Scenario: s.Info(), Seed: o.Seed, Host: hostInfo(), Versions: versions(), Rerun: rerun(o.Rerun, p.plc.Name()),
		Charts: append(append(p.kind.Series(), p.sys.Series()...), lab.PipelineSeries()...),
	}
	if b, err := readSource(s.Source); err == nil {
		r.ScenarioYAML = string(b)
	}
	r.Case = reports.CaseRefFor(s.Case)
	spec := reports.WithPublished(s.Spec(), s.Case)
	r.Spec = &spec
	r.MetricDocs, r.MetricSources = metricDocs(s, p)
	return r
}

// metricDocs say what each metric the scenario names measures.
// metricDocs says what each metric the scenario names measures and,
// for a reduced series, which series and how.
func metricDocs(s *scenarios.Scenario, p *plan) (map[string]string, map[string]reports.MetricSource) {
	known := scenarios.Metrics(p.sys, p.kind)
	docs, sources := map[string]string{}, map[string]reports.MetricSource{}
	for _, name := range s.MetricNames() {
		var red *lab.Reducer
		var src reports.MetricSource
		if m, ok := known[name]; ok {
			docs[name], red, src.Unit = m.Doc, m.Reducer, m.Unit
		} else if r, isExpr, err := lab.ParseReducer(name); isExpr && err == nil {
			docs[name], red = r.Describe(), &r
		}
		if red != nil {
			src.Series, src.Reduce = red.Series, red.Reduce
		}
		if src != (reports.MetricSource{}) {
			sources[name] = src
		}
	}
	return docs, sources
}

// rerun says which placement was used, so that the command replays there.
func rerun(cmd, placement string) string {
	if cmd == "" || strings.Contains(cmd, "--placement") {
		return cmd
	}
	return cmd + " --placement " + placement
}

func nouns(k lab.Kind) [2]string {
	one, many := k.Noun()
	return [2]string{one, many}
}

// facts are the topology's and the workload's, as a person reads them.
func facts(topo, work lab.Settings) []lab.Fact {
	var out []lab.Fact
	for _, s := range []lab.Settings{topo, work} {
		if d, ok := s.(lab.Describer); ok {
			out = append(out, d.Facts()...)
		}
	}
	return out
}

// shortMetrics are the metrics the scenario judges, for the log.
func shortMetrics(m map[string]lab.Float, s *scenarios.Scenario) string {
	var parts []string
	for _, k := range s.MetricNames() {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", k, verdict.FormatValue(float64(v))))
		}
	}
	return strings.Join(parts, " ")
}

func readSource(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	return scenarios.ReadBuiltin(filepath.Base(path))
}

func hostInfo() reports.Host {
	h := reports.Host{OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		h.MemoryMB = kb / 1024
	}
	mode, _ := limits.Detect()
	h.Cgroup = string(mode)
	return h
}

func versions() map[string]string {
	v := map[string]string{"go": runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v["chaoslab"] = bi.Main.Version
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v["chaoslab"] = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		v["chaoslab"] += " (with uncommitted changes)"
	}
	libs := map[string]string{"github.com/go-zookeeper/zk": "go-zookeeper/zk", "go.etcd.io/etcd/client/v3": "etcd client",
		"github.com/hashicorp/consul/api": "consul api"}
	for _, d := range bi.Deps {
		if name, ok := libs[d.Path]; ok {
			v[name] = d.Version
		}
	}
	return v
}
