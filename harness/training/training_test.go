package training_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/harness/training"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

func plan(t *testing.T, id string) *training.Plan {
	t.Helper()
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	s, err := scenarios.Find(id)
	require.NoError(t, err)
	rec, err := seeds.Get(s.Case)
	require.NoError(t, err)
	all, err := seeds.All()
	require.NoError(t, err)
	var others []*seeds.Record
	for i := range all {
		others = append(others, &all[i])
	}
	k, err := lab.GetKind(s.Kind())
	require.NoError(t, err)
	p, err := training.NewPlan(s, &rec, others, k.Series(), 7)
	require.NoError(t, err)
	return p
}

// Every built-in scenario makes a session: checkpoints ending in a
// diagnosis, the real cause among decoys, the record's timeline on the
// run's clock in order and within the run.
func TestPlanOfEveryBuiltinScenario(t *testing.T) {
	all, err := scenarios.Builtin()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 4)
	for _, s := range all {
		p := plan(t, s.ID)
		require.GreaterOrEqual(t, len(p.Checkpoints), 2, s.ID)
		require.Equal(t, "signs", p.Checkpoints[0].ID, s.ID)
		last := p.Checkpoints[len(p.Checkpoints)-1]
		require.True(t, last.Diagnose, s.ID)
		require.Len(t, p.Checkpoints, len(s.Timeline.Faults)+1, s.ID)
		require.GreaterOrEqual(t, len(p.Causes), 4, "%s: the cause and the other cases' at least", s.ID)
		require.NotEmpty(t, p.Series, s.ID)
		require.NotEmpty(t, p.Timeline, s.ID)
		prev := 0.0
		for _, e := range p.Timeline {
			require.GreaterOrEqual(t, e.At, prev, s.ID)
			require.LessOrEqual(t, e.At, p.Span, s.ID)
			prev = e.At
		}
	}
}

// IL-0206's decoys are the responders' own first hypotheses.
func TestPlanOffersTheRespondersFirstHypotheses(t *testing.T) {
	p := plan(t, "il-0206-consul-agent-oom-primary-fallback")
	var texts []string
	for _, c := range p.Causes {
		texts = append(texts, c.Text)
	}
	require.Contains(t, strings.Join(texts, "\n"), "pgbouncer")
	require.Contains(t, strings.Join(texts, "\n"), "Consul agent in each pod was OOM-killed")
}

// steer is controls that let every step go at once.
type steer struct{ acts chan runner.Action }

func (s steer) Wait(context.Context, string, time.Time, string) runner.Go { return runner.Go{OK: true} }
func (s steer) Actions() <-chan runner.Action                             { return s.acts }

// A session opens its checkpoints as the timeline reaches them, holds the
// timeline at a later step until answered, refuses wrong answers, and
// does not hold the end once a diagnosis was given.
func TestSessionHoldsUntilAnswered(t *testing.T) {
	p := plan(t, "il-0277-zk-rolling-replacement-quorum-loss") // two steps
	p.Checkpoints[0].After = 0.05
	sess := training.NewSession(p, "sam", steer{})
	ctx := context.Background()
	require.True(t, sess.Wait(ctx, "vulnerable", time.Now(), "replace").OK)
	require.Eventually(t, func() bool { return len(sess.State().Open) == 1 }, 2*time.Second, 10*time.Millisecond)
	require.ErrorContains(t, sess.Answer(training.Answer{Checkpoint: "signs", Series: "no.such", Direction: "rise"}), "not one of the charts' series")
	require.ErrorContains(t, sess.Answer(training.Answer{Checkpoint: "signs", Cause: p.Causes[0].ID}), "asks for no diagnosis")
	require.ErrorContains(t, sess.Answer(training.Answer{Checkpoint: "step-2", Cause: p.Causes[0].ID}), "not open yet")
	require.NoError(t, sess.Answer(training.Answer{Checkpoint: "signs", Series: p.Series[0].Name, Direction: "rise"}))

	done := make(chan runner.Go, 1)
	go func() { done <- sess.Wait(ctx, "vulnerable", time.Now(), "replace") }()
	select {
	case <-done:
		t.Fatal("step 2 went on before the trainee answered")
	case <-time.After(300 * time.Millisecond):
	}
	require.Equal(t, []string{"step-2"}, ids(sess.State().Open))
	require.ErrorContains(t, sess.Answer(training.Answer{Checkpoint: "step-2", Cause: "c99"}), "no cause")
	require.NoError(t, sess.Answer(training.Answer{Checkpoint: "step-2", Cause: p.Causes[1].ID}))
	g := <-done
	require.True(t, g.OK)
	require.Contains(t, strings.Join(g.Notes, " "), "for the trainee at checkpoint step-2")

	end := make(chan runner.Go, 1)
	go func() { end <- sess.Wait(ctx, "vulnerable", time.Now(), "end") }()
	select {
	case g := <-end:
		require.True(t, g.OK)
	case <-time.After(2 * time.Second):
		t.Fatal("the end was held though a diagnosis was given")
	}
}

func ids(cps []training.Checkpoint) []string {
	var out []string
	for _, c := range cps {
		out = append(out, c.ID)
	}
	return out
}

// The debrief reads each prediction from the measured series, the
// diagnosis against the record's cause and the trainee's actions against
// the responders'.
func TestDebrief(t *testing.T) {
	p := plan(t, "il-0587-zk-treecache-reconnect-storm")
	p.Checkpoints[0].After = 0.01
	sess := training.NewSession(p, "sam", steer{})
	start := time.Now()
	require.True(t, sess.Wait(context.Background(), "vulnerable", start, "pause").OK)
	require.Eventually(t, func() bool { return len(sess.State().Open) == 1 }, 2*time.Second, 5*time.Millisecond)
	series := p.Series[0].Name
	require.NoError(t, sess.Answer(training.Answer{Checkpoint: "signs", Series: series, Direction: "rise"}))
	var real string
	for _, c := range p.Causes {
		if strings.Contains(c.Text, "TreeCache") {
			real = c.ID
		}
	}
	require.NotEmpty(t, real)
	require.NoError(t, sess.Answer(training.Answer{Checkpoint: training.Anytime, Cause: real}))

	// The run's clock: the variant started 40 s before the first step;
	// the series is flat at 1 until then and 10 afterwards.
	v := &reports.VariantResult{Name: "vulnerable", Verdict: "violated", StartedAt: start.Add(-40 * time.Second)}
	s := &lab.Series{Name: series, Source: "x"}
	for i := 0; i < 120; i++ {
		val := 1.0
		if i > 41 {
			val = 10
		}
		s.Points = append(s.Points, lab.Pt(float64(i), val))
	}
	v.Series = []*lab.Series{s}
	v.Faults = []reports.FaultWindow{{Fault: "pause", Target: "leader", Start: 40, End: 70}, {Fault: "kill-restart", Target: "leader", Start: 60, End: 63, Detail: "action by sam"}}
	d := sess.Debrief(&reports.Report{Variants: []*reports.VariantResult{v}})
	require.Len(t, d.Predictions, 1)
	require.Equal(t, "rise", d.Predictions[0].Measured, d.Predictions[0].Detail)
	require.True(t, d.Predictions[0].Right)
	require.True(t, d.Diagnosis.Right)
	require.GreaterOrEqual(t, d.DiagnosedAfter, 0.0)
	var election *reports.DebriefAction
	for i, a := range d.Actions {
		if a.Kind == "leader-election" {
			election = &d.Actions[i]
		}
	}
	require.NotNil(t, election)
	require.True(t, election.Matched, "kill-restart of the leader is the responders' election")
	require.Contains(t, election.Responders, "leader election")
	require.Equal(t, 4, d.Score, "1 prediction + 2 diagnosis + 1 action")
	require.NotEmpty(t, d.Reveal)

	// It is drawn at the top of the report.
	r := &reports.Report{Schema: reports.SchemaVersion, RunID: "x", Scenario: &reports.ScenarioInfo{ID: "x"}, Variants: []*reports.VariantResult{v}, Debrief: d}
	dir := t.TempDir()
	require.NoError(t, reports.Write(r, dir))
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(html), `id="debrief"`)
	require.Contains(t, string(html), "Score 4 of")
}

// The session's routes answer only with the run's token.
func TestRoutesNeedTheToken(t *testing.T) {
	p := plan(t, "il-0587-zk-treecache-reconnect-storm")
	sess := training.NewSession(p, "sam", steer{})
	mux := http.NewServeMux()
	sess.Routes(func(pattern string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Chaoslab-Token") != "tok" {
				http.Error(w, "token", http.StatusForbidden)
				return
			}
			h(w, r)
		})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/training")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/training/answer", strings.NewReader(`{"checkpoint":"anytime","cause":"c1"}`))
	req.Header.Set("X-Chaoslab-Token", "tok")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "no diagnosis before the incident starts")
}
