package replays_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/fleet"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/verdict"
)

func skipUnlessFleet(t *testing.T) *scenarios.Scenario {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a real etcd cluster and a fleet of servers (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root for cgroups")
	}
	if mode, _ := limits.Detect(); mode == limits.ModeNone {
		t.Skip("integration test: needs cgroups for the thread limit")
	}
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	s, err := scenarios.Find("il-0384-kinesis-thread-per-peer")
	require.NoError(t, err)
	return s
}

// assertFleetCleanedUp checks that no front-end server, etcd member or
// cgroup of the run is left.
func assertFleetCleanedUp(t *testing.T, r *reports.Report) {
	t.Helper()
	labtest.NoProcessNaming(t, r.Dir, "/chaoslab/"+r.Scenario.ID+"-")
	labtest.NoCgroups(t, r.Scenario.ID)
}

// TestIntegration_ReplayIL0384 replays the built-in IL-0384 scenario for
// real: a 3-member etcd cluster, 32 front-end processes under pids limits,
// the capacity addition, and the fast and slow restarts.
func TestIntegration_ReplayIL0384(t *testing.T) {
	s := skipUnlessFleet(t)
	bin := chaoslabBinary(t)
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: t.TempDir(), Placement: "local", AgentBinary: bin, Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	t.Log(reports.Summary(r))
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.True(t, r.ExpectationMet)

	vul, slow, mit := r.Variant("vulnerable"), r.Variant("vulnerable-slow-restart"), r.Variant("mitigated")
	require.NotNil(t, vul)
	require.NotNil(t, slow)
	require.NotNil(t, mit)
	w, err := s.WorkloadFor("vulnerable")
	require.NoError(t, err)
	fl := w.(*fleet.Settings)
	limit := float64(fl.ThreadLimit)
	for _, v := range []*reports.VariantResult{vul, slow} {
		m := v.Metrics
		// Before the addition the fleet ran at most at the limit (a CI
		// runner's fleet reached 40 of 40: the Go runtime's own threads
		// vary with load) and routed, so no server died of it.
		require.LessOrEqual(t, float64(m["fleet.threads.before_trigger_max"]), limit, v.Name)
		require.GreaterOrEqual(t, float64(m["fleet.routing_success.before_trigger"]), 0.95, v.Name)
		// After it, the kernel refused threads and no server routed.
		require.Greater(t, float64(m["fleet.pids_limit_refusals"]), 0.0, v.Name)
		require.Less(t, float64(m["fleet.routing_success.max_server_after_trigger"]), 0.5, "%s: every server stops routing", v.Name)
	}
	require.True(t, math.IsInf(float64(vul.Metrics["fleet.recovery_after_restart_s"]), 1), "the all-at-once restart never recovers")
	require.Greater(t, float64(vul.Metrics["fleet.health_removals"]), 0.0)
	require.Less(t, float64(slow.Metrics["fleet.recovery_after_restart_s"]), 70.0)
	require.Less(t, float64(mit.Metrics["fleet.threads.max"]), limit/2)
	require.Equal(t, 0.0, float64(mit.Metrics["fleet.thread_limit_exits"]))
	require.Greater(t, len(seriesOf(vul, "server.threads")), fl.Servers-1)
	require.FileExists(t, filepath.Join(r.Dir, "index.html"))
	assertFleetCleanedUp(t, r)

	// The report loads back and re-checks to the same verdict.
	back, err := reports.Load(r.Dir)
	require.NoError(t, err)
	got, _, err := back.Recheck(nil)
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, got)
}

func seriesOf(v *reports.VariantResult, name string) []*reports.Series {
	var out []*reports.Series
	for _, s := range v.Series {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestIntegration_AbortFleet interrupts an IL-0384 run during its warm-up:
// the report says aborted, and no server, etcd member or cgroup is left.
func TestIntegration_AbortFleet(t *testing.T) {
	s := skipUnlessFleet(t)
	bin := chaoslabBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(25*time.Second, cancel)
	r, err := runner.Run(ctx, s, runner.Options{Variants: []string{"vulnerable"}, Seed: 1, OutDir: t.TempDir(), Placement: "local", AgentBinary: bin, Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	require.Equal(t, verdict.Aborted, r.Verdict, r.Reason)
	require.Equal(t, verdict.Aborted, r.Variant("vulnerable").Verdict)
	require.FileExists(t, filepath.Join(r.Dir, "report.json"))
	assertFleetCleanedUp(t, r)
}
