package runner_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// probeKind is a third workload kind that exists only in this test: it is
// registered here, and nothing in runner, reports, verdict or scenarios
// knows it. It asks the real ensemble for the root znode on a fixed period
// from the harness and records whether it answered.
type probeKind struct{}

type probeSettings struct {
	// Every is the probe's period.
	Every lab.Duration `yaml:"every" json:"every"`
	// Timeout is the session timeout of the probe's connection.
	Timeout lab.Duration `yaml:"timeout" json:"timeout"`
	// Panic makes the probe panic, for the tests of a run's abort: in
	// "start" or in "progress" (the runner's progress display).
	Panic string `yaml:"panic" json:"panic"`
}

func (p *probeSettings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(p.Every.D() > 0, "every", "want > 0")
	return c
}

func (probeKind) Name() string            { return "test-probe" }
func (probeKind) Systems() []string       { return []string{"zookeeper"} }
func (probeKind) Groups() []string        { return nil }
func (probeKind) Probe(string) lab.Target { return nil }
func (probeKind) Noun() (string, string)  { return "probe", "probes" }
func (probeKind) NewSettings() lab.Settings {
	return &probeSettings{Every: lab.Duration(200 * time.Millisecond), Timeout: lab.Duration(4 * time.Second)}
}

func (probeKind) Series() []lab.SeriesDef {
	return []lab.SeriesDef{{Name: "probe.ok", Title: "The test probe got an answer (1) or not (0)", Unit: "0/1"}}
}

func (probeKind) Metrics() []lab.MetricDef {
	return []lab.MetricDef{
		{Name: "probe.answers", Unit: "answers", Doc: "answers the probe got"},
		{Name: "probe.ok.min_after_faults", Unit: "0/1", Doc: "lowest probe result after the faults",
			Reducer: &lab.Reducer{Series: "probe.ok", Reduce: "min", Window: "after-faults"}},
	}
}

func (probeKind) New(env *lab.Env, c lab.Cluster, s lab.Settings) (lab.Workload, error) {
	return &probe{env: env, c: c, s: s.(*probeSettings)}, nil
}

type probe struct {
	env  *lab.Env
	c    lab.Cluster
	s    *probeSettings
	conn *zk.Conn
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	points  []lab.Point
	answers int
}

func (p *probe) Seed(context.Context) error { return nil }

func (p *probe) Start(ctx context.Context) error {
	conn, _, err := zk.Connect(p.c.Endpoints(lab.FromHost), p.s.Timeout.D(), zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	p.conn = conn
	if p.s.Panic == "start" {
		panic("the test probe panics in Start")
	}
	ctx, p.stop = context.WithCancel(ctx)
	p.wg.Go(func() {
		t := time.NewTicker(p.s.Every.D())
		defer t.Stop()
		for ctx.Err() == nil {
			ok := 0.0
			done := make(chan error, 1)
			go func() { _, _, err := conn.Get("/"); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					ok = 1
				}
			case <-time.After(p.s.Every.D()):
			}
			p.mu.Lock()
			p.points = append(p.points, lab.Pt(p.env.Now(), ok))
			p.answers += int(ok)
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	})
	return nil
}

func (p *probe) Steady() lab.Steady {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := lab.Steady{Total: 1, What: "probe answering"}
	if n := len(p.points); n > 0 && p.points[n-1].V == 1 {
		st.Ready = 1
	}
	return st
}

func (p *probe) Targets(string) []lab.Target { return nil }
func (p *probe) Progress() []slog.Attr {
	if p.s.Panic == "progress" {
		panic("the test probe panics in Progress")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return []slog.Attr{slog.Int("answers", p.answers)}
}

func (p *probe) Stop(context.Context) error {
	if p.stop != nil {
		p.stop()
	}
	p.wg.Wait()
	if p.conn != nil {
		p.conn.Close()
	}
	return nil
}

func (p *probe) Collect(r *lab.Result, _ lab.Timeline) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := r.SeriesFor("probe.ok", "probe", "0/1")
	s.Points = append(s.Points, p.points...)
	r.SetMetric("probe.answers", float64(p.answers))
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func init() { lab.RegisterKind(probeKind{}) }

const probeScenario = `id: test-probe-pause
title: A probe of the leader's ensemble through a leader pause
case: IL-0587
system: zookeeper
description: A test-only workload kind, registered by the test, through the one pipeline.
topology:
  zookeeper:
    servers: 3
    tick_ms: 1000
    heap_mb: 128
workload:
  kind: test-probe
  every: 200ms
timeline:
  warmup: 3s
  faults:
    - at: 0s
      fault: pause
      target: leader
      duration: 4s
  observe: 6s
variants:
  probe:
    description: The probe with a 4 s session.
    workload:
      timeout: 4s
hypotheses:
  - id: answers
    description: The probe got answers.
    metric: probe.answers
    op: ">="
    threshold: 10
  - id: answers-after
    description: The probe answers again once the ensemble has a leader again (a reducer written in the scenario).
    metric: last(probe.ok)@after-faults
    op: "=="
    threshold: 1
expect:
  probe: held
`

// A third workload kind runs through the pipeline with no edit to
// runner, reports, verdict or scenarios, and the report draws its series
// under the title it declared.
func TestIntegration_ThirdKind(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	s, err := scenarios.Parse("probe.yaml", []byte(probeScenario))
	require.NoError(t, err)
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: t.TempDir(), Placement: "local", Logger: labtest.Logger(t)})
	require.NoError(t, err)
	t.Log(reports.Summary(r))
	require.Equal(t, verdict.Held, r.Verdict, r.Reason)
	v := r.Variant("probe")
	require.Greater(t, float64(v.Metrics["probe.answers"]), 10.0)
	require.Contains(t, v.Metrics, "probe.ok.min_after_faults")
	require.Equal(t, 1.0, float64(v.Metrics["last(probe.ok)@after-faults"]))
	require.Greater(t, float64(v.Metrics["cluster.leaderless_s"]), 0.0, "the paused leader left the ensemble without one")
	require.Len(t, v.Faults, 1)
	require.Len(t, v.Faults[0].Proofs, 1, "the pause read its target's state back")
	require.Equal(t, record.Landed, v.Faults[0].Proofs[0].Landed, v.Faults[0].Proofs[0].Observed)
	require.Contains(t, v.Faults[0].Proofs[0].Observed, "state paused")
	html, err := os.ReadFile(filepath.Join(r.Dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(html), "The test probe got an answer (1) or not (0)")
	labtest.NoProcessNaming(t, r.Dir)
	labtest.NoCgroups(t, s.ID)
}
