package il0277_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/harness/tier"
	"github.com/chaoslab/chaoslab/replays/replaytest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

const il0277 = "il-0277-zk-rolling-replacement-quorum-loss"

// TestIntegration_ReplayIL0277 replays IL-0277 at its ci size on the
// local placement: the vulnerable procedure (shallow gates, proceed, an
// initLimit too short for a snapshot under load) replaces the second
// follower while the first still syncs, leaving the leader the only voter
// that serves; the mitigated one (deep gates, initLimit sized for the
// snapshot) keeps a majority serving. About 5.5 min: the mitigated deep gates wait
// 40-50 s for each of two snapshot syncs at 0.1 cores, and a shorter
// sync would give the vulnerable ensemble its leader back within the
// bound (the time without one is about one sync).
//
// Release tier until it decides: its deciding figure, the vulnerable
// time without a leader, sat at 11.8 s and 9.6 s against its bound of
// 10 s in two runs of the same seed on this machine, when the procedure
// replaced zk1 and zk2 whichever led (issue 30); a figure within 2x of
// its bound may not gate CI.
func TestIntegration_ReplayIL0277(t *testing.T) {
	tier.Release(t, "TestIntegration_GenericFaultsLand (replace and pause on ZooKeeper), TestIntegration_RaiseInitLimitRestartsObserver and TestIntegration_ObserversOnDocker")
	labtest.SkipUnlessZooKeeper(t)
	s := replaytest.Builtin(t, il0277, "ci")
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: labtest.RunDir(t), Placement: "local",
		AgentBinary: replaytest.ChaoslabBinary(t), Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	assertIL0277(t, r, 2.5)
	replaytest.AssertCleanedUp(t, r)
}

// TestIntegration_ReplayIL0277Docker replays the same size with servers
// (3 voters, 2 observers, each held to 0.1 cores by the engine's
// NanoCPUs) and clients in containers; the replacements are fresh
// containers.
func TestIntegration_ReplayIL0277Docker(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0277 (local processes) and TestIntegration_ObserversOnDocker")
	ctx := context.Background()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	s := replaytest.Builtin(t, il0277, "ci")
	replaytest.SkipUnlessDockerImages(t, s)
	r, err := runner.Run(ctx, s, runner.Options{Seed: 1, OutDir: labtest.RunDir(t), Placement: "docker",
		Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	require.Equal(t, "docker", r.Backend)
	assertIL0277(t, r, 10.0)
	left, err := docker.Leftovers(ctx, "")
	require.NoError(t, err)
	require.Empty(t, left, "containers or networks left")
}

// assertIL0277 checks a two-variant run: REPRODUCED, with the vulnerable
// ensemble's time without a serving majority 2x past majority-serves'
// bound, the mitigated one at most mitLost, and each procedure's own
// gates on two different followers. On docker mitLost is larger: the
// sampler's mntr (800 ms deadline, through the engine's published port)
// goes unanswered for seconds by a leader at 0.1 cores sending a
// snapshot, and a member that does not answer does not count as serving.
// Since majority-serves' bound is 5 s (2026-12-06) that may fail the
// mitigated variant on docker: to be measured (issue 30).
func assertIL0277(t *testing.T, r *reports.Report, mitLost float64) {
	t.Helper()
	t.Log(reports.Summary(r))
	vul, mit := r.Variant("vulnerable"), r.Variant("mitigated")
	require.NotNil(t, vul)
	require.NotNil(t, mit)
	for _, v := range []*reports.VariantResult{vul, mit} {
		t.Logf("FIGURES %s: quorum_lost_s=%.1f leaderless_s=%.1f not_synced_shutdowns=%v elections=%v", v.Name,
			float64(v.Metrics["cluster.quorum_lost_s"]), float64(v.Metrics["cluster.leaderless_s"]),
			v.Metrics["ensemble.not_synced_shutdowns.total"], v.Metrics["ensemble.elections.total"])
	}
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)

	// The vulnerable leader, the member the procedure does not replace,
	// is left the only voter that serves while both followers sync.
	require.GreaterOrEqual(t, float64(vul.Metrics["cluster.quorum_lost_s"]), 10.0, "vulnerable: 2x past majority-serves' 5 s")
	require.LessOrEqual(t, float64(mit.Metrics["cluster.quorum_lost_s"]), mitLost, "mitigated: time without a serving majority")
	require.Zero(t, float64(mit.Metrics["ensemble.not_synced_shutdowns.total"]), "mitigated: no leader lost its quorum")
	// Both replacements ran in each variant, each with its own gate.
	require.Len(t, vul.Faults, 2)
	require.Len(t, mit.Faults, 2)
	require.Equal(t, "shallow", vul.Faults[0].Params["gate"])
	require.Equal(t, "deep", mit.Faults[0].Params["gate"])
	for _, v := range []*reports.VariantResult{vul, mit} {
		require.NotEqual(t, v.Faults[0].Member, v.Faults[1].Member, "%s: the second step replaces the other follower", v.Name)
	}
	var deepPassed int
	for _, e := range mit.Events {
		if e.Kind == "gate" && strings.Contains(e.Detail, "deep gate passed") {
			deepPassed++
		}
	}
	require.Equal(t, 2, deepPassed, "the mitigated procedure went on only once each member was synced")
}
