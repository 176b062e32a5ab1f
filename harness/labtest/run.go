package labtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// Option changes a replay.
type Option func(*runner.Options)

// Client runs a client program (a command and its arguments) in place of
// the scenario's own, as a variant expected to hold.
func Client(command ...string) Option {
	return func(o *runner.Options) {
		if o.Client == nil {
			o.Client = &lab.ClientProgram{}
		}
		o.Client.Command = command
	}
}

// ClientImage runs the client as a container of the image (on the docker
// placement); Client's words are then the command run in it.
func ClientImage(ref string) Option {
	return func(o *runner.Options) {
		if o.Client == nil {
			o.Client = &lab.ClientProgram{}
		}
		o.Client.Image = ref
	}
}

// ClientEnv adds environment for the client.
func ClientEnv(k, v string) Option {
	return func(o *runner.Options) {
		if o.Client == nil {
			o.Client = &lab.ClientProgram{}
		}
		if o.Client.Env == nil {
			o.Client.Env = map[string]string{}
		}
		o.Client.Env[k] = v
	}
}

// Seed sets the replay's seed; Placement where it runs (default local);
// OutDir where its report goes (default the test's temporary folder).
func Seed(n int64) Option             { return func(o *runner.Options) { o.Seed = n } }
func Placement(name string) Option    { return func(o *runner.Options) { o.Placement = name } }
func OutDir(dir string) Option        { return func(o *runner.Options) { o.OutDir = dir } }
func WithReferences() Option          { return func(o *runner.Options) { o.WithReferences = true } }
func Variants(names ...string) Option { return func(o *runner.Options) { o.Variants = names } }

// Size replays the scenario at one of its sizes (ci: the reduced size CI
// replays).
func Size(name string) Option { return func(o *runner.Options) { o.Size = name } }

// T is what Run needs of a test (a *testing.T).
type T interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
}

// runDir is RunDir for a *testing.T (or B), the temporary folder for
// any other T.
func runDir(t T) string {
	if tb, ok := t.(testing.TB); ok {
		return RunDir(tb)
	}
	return t.TempDir()
}

// Run replays a scenario under the test: with Client, your client under
// the incident's timeline. It fails the test when the run does not meet
// the scenario's expectation (your client: it must hold), naming the
// violated hypotheses and the report; -short skips it.
func Run(t T, scenario string, opts ...Option) *reports.Report {
	t.Helper()
	if testing.Short() {
		t.Skipf("labtest: replaying %s takes minutes (skipped with -short)", scenario)
		return nil
	}
	o := runner.Options{Placement: "local", OutDir: runDir(t), Logger: Logger(tAsTesting(t))}
	for _, opt := range opts {
		opt(&o)
	}
	if why := cannotRun(o.Placement); why != "" {
		t.Skipf("labtest: cannot replay %s here: %s", scenario, why)
		return nil
	}
	if o.AgentBinary == "" && isTestBinary() {
		bin, err := agentBinary()
		if err != nil {
			t.Skipf("labtest: cannot replay %s here: %v", scenario, err)
			return nil
		}
		o.AgentBinary = bin
	}
	r, err := Replay(context.Background(), scenario, o)
	if err != nil {
		t.Errorf("labtest: replay %s: %v", scenario, err)
		return r
	}
	if !r.ExpectationMet {
		t.Errorf("labtest: %s did not meet its expectation: %s\n%sreport: %s", scenario, r.Verdict, failures(r), filepath.Join(r.Dir, "index.html"))
	}
	return r
}

// Replay runs a scenario (an id, a case id or a file) with the options.
func Replay(ctx context.Context, scenario string, o runner.Options) (*reports.Report, error) {
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	s, err := scenarios.Find(scenario)
	if err != nil {
		return nil, err
	}
	if o.AgentBinary == "" && isTestBinary() {
		if o.AgentBinary, err = agentBinary(); err != nil {
			return nil, err
		}
	}
	return runner.Run(ctx, s, o)
}

// cannotRun says why a replay cannot run on the placement here ("" when
// it can): no engine answers, or it cannot hold programs to their limits.
func cannotRun(placement string) string {
	if placement == "" || placement == "auto" {
		placement = "local"
	}
	f, err := lab.GetPlacement(placement)
	if err != nil {
		return err.Error()
	}
	p, err := f(lab.PlacementOptions{})
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Available(ctx); err != nil {
		return err.Error()
	}
	if le, ok := p.(lab.LimitEnforcer); ok {
		if err := le.Enforces(); err != nil {
			return err.Error() + " (the scenario's limits would not hold; run the test as root)"
		}
	}
	return ""
}

// agentBinary is the chaoslab the built-in clients' agents run as:
// CHAOSLAB_BINARY; inside chaoslab's source tree a build of it (cached);
// elsewhere (a module of yours that imports labtest) the chaoslab on PATH.
func agentBinary() (string, error) {
	if b := os.Getenv("CHAOSLAB_BINARY"); b != "" {
		return b, nil
	}
	if _, err := images.FindSourceDir(); err == nil {
		return ChaoslabBinary()
	}
	if b, err := exec.LookPath("chaoslab"); err == nil {
		return b, nil
	}
	return "", errors.New("no chaoslab to run the lab's agents: put the one scripts/setup.sh builds (bin/chaoslab) on PATH, or set CHAOSLAB_BINARY")
}

// failures lists what broke, a line each.
func failures(r *reports.Report) string {
	var b strings.Builder
	for _, v := range r.Variants {
		if v.Verdict == v.Expect {
			continue
		}
		fmt.Fprintf(&b, "  %s: %s (expected %s)\n", v.Name, v.Verdict, v.Expect)
		for _, h := range v.Hypotheses {
			if !h.Held && !(h.Missing && h.Optional) {
				fmt.Fprintf(&b, "    %s\n", h.String())
			}
		}
	}
	return b.String()
}

func isTestBinary() bool { return strings.HasSuffix(os.Args[0], ".test") }

func tAsTesting(t T) *testing.T {
	if tt, ok := t.(*testing.T); ok {
		return tt
	}
	return nil
}
