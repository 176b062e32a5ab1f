package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// panicFault exists only in this test: it pauses its target and panics,
// leaving the server stopped for the cleanup to deal with.
type panicFault struct{}

func (*panicFault) Name() string                  { return "test-panic" }
func (*panicFault) Available(faults.Target) error { return nil }
func (*panicFault) Inject(_ context.Context, t faults.Target, _ time.Duration) error {
	_ = t.Pause()
	panic("the test fault panics with " + t.Name() + " paused")
}

func init() { faults.Register(func() faults.Fault { return &panicFault{} }) }

// panicScenario is the probe's scenario with a panic where asked.
func panicScenario(id, where, fault string) string {
	s := strings.Replace(probeScenario, "id: test-probe-pause", "id: "+id, 1)
	s = strings.Replace(s, "      fault: pause", "      fault: "+fault, 1)
	return strings.Replace(s, "  every: 200ms", fmt.Sprintf("  every: 200ms\n  panic: %q", where), 1)
}

// A panic anywhere in a run (a plug-in on the variant's goroutine, the
// runner's progress display, a fault's goroutine) aborts it as Ctrl-C
// does: nothing of the run is left running, the report is written marked
// aborted and says where, and Run returns the panic.
func TestIntegration_PanicAborts(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	cases := []struct{ name, where, fault, says string }{
		{"workload-start", "start", "pause", "variant probe"},
		{"progress", "progress", "pause", "the progress display"},
		{"fault", "", "test-panic", "fault test-panic on"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "test-panic-" + c.name
			s, err := scenarios.Parse(id+".yaml", []byte(panicScenario(id, c.where, c.fault)))
			require.NoError(t, err)
			r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: t.TempDir(), Placement: "local", Logger: labtest.Logger(t)})
			var pe *runner.PanicError
			require.True(t, errors.As(err, &pe), "Run returns the panic: %v", err)
			require.Contains(t, pe.Error(), c.says)
			require.NotNil(t, r)
			require.Equal(t, verdict.Aborted, r.Verdict, r.Reason)
			stored, err := reports.Load(r.Dir)
			require.NoError(t, err)
			require.Equal(t, verdict.Aborted, stored.Verdict)
			require.Contains(t, stored.Variant("probe").Reason, "panic")
			labtest.NoProcessNaming(t, r.Dir)
			labtest.NoCgroups(t, id)
		})
	}
}
