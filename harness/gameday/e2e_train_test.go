package gameday_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/harness/training"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// TestIntegration_TrainingInChromium drives a training session as a
// trainee does, in headless Chromium, during a real IL-0587 run on
// ZooKeeper: the dashboard hides the fault, the first checkpoint opens
// into the incident and takes a prediction, the trainee forces a leader
// election, the end waits for the diagnosis, and the report opens with a
// debrief that judged all three.
func TestIntegration_TrainingInChromium(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (Debian's chromium; scripts/setup.sh installs it)")
	}
	bin, err := labtest.ChaoslabBinary()
	require.NoError(t, err)
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	s := il0587Gameday(t)
	plan, err := training.PlanFor(s, 1)
	require.NoError(t, err)
	shots := artifacts(t)

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	hub := gameday.NewHub()
	srv, err := gameday.Listen("127.0.0.1", 0, hub, gameday.NewControls(func(d string) { hub.Control("", d) }))
	require.NoError(t, err)
	defer srv.Close(context.Background())
	o := runner.Options{Seed: 1, OutDir: t.TempDir(), Placement: "local", AgentBinary: bin, Logger: labtest.Logger(t), Variants: []string{"vulnerable"}}
	settle := gameday.Wire(ctx, &o, srv, nil)
	sess := training.NewSession(plan, "e2e-trainee", srv.Controls)
	sess.Hold = 90 * time.Second
	sess.Routes(srv.Mount)
	o.Steer = sess
	ran := make(chan error, 1)
	var r *reports.Report
	go func() {
		var err error
		r, err = runner.Run(ctx, s, o)
		settle()
		if err == nil {
			err = sess.Finish(r)
		}
		ran <- err
	}()

	actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1500, 1200))...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	require.Eventually(t, func() bool { return hub.Updated().After(time.Time{}) }, time.Minute, 100*time.Millisecond)
	b := browserOf(t, bctx)

	b.run("open the dashboard", chromedp.Navigate(srv.URL()), chromedp.WaitVisible(chromedp.CSS("#training")))
	require.True(t, b.bool(`document.getElementById("facilitator").hidden`), "a trainee sees no facilitator's controls")
	require.NotContains(t, b.str(`document.getElementById("title").textContent`), "TreeCache", "the title gives the cause away")

	// 10 s into the incident: what will happen next?
	b.wait("the first checkpoint", `!!document.getElementById("submit-signs")`, 3*time.Minute)
	require.False(t, b.bool(`[...document.querySelectorAll("#charts svg rect title")].some(x => x.textContent.includes("pause"))`), "a fault window names the fault")
	b.bool(`document.getElementById("series-signs").value = "server.outstanding_requests", document.getElementById("dir-signs").value = "rise", true`)
	b.shot(shots, "training-checkpoint.png")
	b.run("predict", chromedp.Click(chromedp.CSS("#submit-signs")))
	b.wait("prediction recorded", `document.getElementById("tr-msg").textContent.includes("signs")`, 10*time.Second, `document.getElementById("tr-msg").textContent`)

	// Act as the responders did: force a leader election.
	b.bool(`[...document.querySelectorAll("#presets button")].find(x => x.textContent.startsWith("Force a leader")).click(), true`)
	b.wait("the action on the timeline", `window.chaoslab.actions.length > 0`, 30*time.Second)

	// Before the end: the diagnosis.
	b.wait("the diagnosis checkpoint", `!!document.getElementById("submit-diagnosis")`, 2*time.Minute)
	require.True(t, b.bool(`[...document.querySelectorAll("#tr-timeline li")].length > 0`), "no entry of the case's timeline was revealed")
	b.bool(`[...document.querySelectorAll('input[name="cause-diagnosis"]')].find(x => x.parentElement.textContent.includes("TreeCache")).checked = true, true`)
	b.run("diagnose", chromedp.Click(chromedp.CSS("#submit-diagnosis")))

	require.NoError(t, <-ran)
	b.wait("the debrief link", `!!document.getElementById("debrief-link")`, 20*time.Second)
	b.run("read the debrief", chromedp.Click(chromedp.CSS("#debrief-link")), chromedp.WaitVisible(chromedp.CSS("#debrief")))
	b.shot(shots, "training-debrief.png")

	d := r.Debrief
	require.NotNil(t, d)
	t.Logf("debrief: score %d of %d, diagnosed after %.0f s, predictions %+v, actions %+v", d.Score, d.Max, d.DiagnosedAfter, d.Predictions, d.Actions)
	require.True(t, d.Diagnosis.Right)
	require.Len(t, d.Predictions, 1)
	require.Equal(t, "rise", d.Predictions[0].Said)
	require.NotEqual(t, "no samples", d.Predictions[0].Measured)
	var election bool
	for _, a := range d.Actions {
		election = election || (a.Kind == "leader-election" && a.Matched)
	}
	require.True(t, election, "the trainee's election is matched to the responders'")
	html, err := os.ReadFile(filepath.Join(r.Dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(html), "Debrief: e2e-trainee")
	var heldFor bool
	for _, e := range r.Variants[0].Events {
		heldFor = heldFor || (e.Kind == "control" && strings.Contains(e.Detail, "for the trainee at checkpoint diagnosis"))
	}
	require.True(t, heldFor, "the hold for the diagnosis is not on the report's timeline")
}

// browser is a Chromium tab driven by a test.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func browserOf(t *testing.T, ctx context.Context) browser { return browser{t, ctx} }

func (b browser) run(what string, as ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, as...), what)
}

func (b browser) bool(js string) bool {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
	require.NoError(b.t, err, js)
	return v
}

func (b browser) str(js string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js))
	require.NoError(b.t, err, js)
	return v
}

// wait polls js until true, d at most; on failure it shows what the
// optional show expressions evaluate to.
func (b browser) wait(what, js string, d time.Duration, show ...string) {
	b.t.Helper()
	deadline := time.Now().Add(d)
	for !b.bool(js) {
		if time.Now().After(deadline) {
			for _, e := range show {
				b.t.Logf("%s = %q", e, b.str(e))
			}
			b.t.Fatalf("%s: not within %s (%s)", what, d, js)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (b browser) shot(dir, name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	p := filepath.Join(dir, name)
	require.NoError(b.t, os.WriteFile(p, png, 0o644))
	b.t.Logf("screenshot: %s", p)
}
