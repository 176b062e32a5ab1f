package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// lateFault exists only in this test: it kills its target, then aims the
// real pause fault at the process that has exited, then starts the
// target again. The pause cannot land.
type lateFault struct{}

func (*lateFault) Name() string                  { return "test-pause-after-exit" }
func (*lateFault) Available(faults.Target) error { return nil }
func (*lateFault) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	if err := t.Kill(); err != nil {
		return err
	}
	if err := faults.MustNew("pause").Inject(ctx, t, d); err != nil {
		return err
	}
	return t.Restart(context.WithoutCancel(ctx))
}

func init() { faults.Register(func() faults.Fault { return &lateFault{} }) }

// A fault that did not land (a pause aimed at a process that had already
// exited, as read back from its placement) makes the variant
// INCONCLUSIVE with the reason, whatever the hypotheses say; the report
// keeps the proof beside the fault window.
func TestIntegration_FaultThatCannotLandIsInconclusive(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	y := strings.Replace(probeScenario, "id: test-probe-pause", "id: test-fault-not-landed", 1)
	y = strings.Replace(y, "      fault: pause\n      target: leader", "      fault: test-pause-after-exit\n      target: follower", 1)
	s, err := scenarios.Parse("late.yaml", []byte(y))
	require.NoError(t, err)
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: t.TempDir(), Placement: "local", Logger: labtest.Logger(t)})
	require.NoError(t, err)
	v := r.Variant("probe")
	require.Equal(t, verdict.Inconclusive, v.Verdict, v.Reason)
	require.Contains(t, v.Reason, "test-pause-after-exit did not land on")
	require.Contains(t, v.Reason, "had already exited")
	require.NotEmpty(t, v.Hypotheses, "the hypotheses are still judged, for the reader")
	require.Equal(t, verdict.Inconclusive, r.Verdict)
	require.Equal(t, record.Missed, v.Faults[0].Proofs[0].Landed)
	labtest.NoCgroups(t, s.ID)
}
