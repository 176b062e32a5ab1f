package il0206_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/harness/tier"
	"github.com/chaoslab/chaoslab/replays/replaytest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// il0206At is the IL-0206 scenario at a size ("" as written, ci: the
// incident and the write-up's fix with shorter windows), skipping where
// it cannot run.
func il0206At(t *testing.T, size string) *scenarios.Scenario {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts Consul and PostgreSQL (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root for cgroups and the postgres user")
	}
	if mode, _ := limits.Detect(); mode == limits.ModeNone {
		t.Skip("integration test: needs cgroups for the agents' memory limit")
	}
	if _, err := os.Stat(pgcluster.DefaultBinDir + "/postgres"); err != nil {
		t.Skipf("no PostgreSQL 15 (scripts/setup.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, err := images.ConsulBinary(ctx, images.Options{}); err != nil {
		t.Skipf("no consul binary (chaoslab images build --only consul): %v", err)
	}
	return replaytest.Builtin(t, "il-0206-consul-agent-oom-primary-fallback", size)
}

const (
	il0206ShareBound = 0.2 // reads-on-replicas
	il0206P99Bound   = 400 // read-p99, ms
)

// TestIntegration_ReplayIL0206 replays IL-0206 at its ci size on real
// Consul agents and real PostgreSQL: under the scaled limit the agents
// are OOM-killed by the kernel and the 2022 load balancer sends most
// reads to the primary; the doubled limit keeps them on the replicas.
// Every deciding figure is at least 2x from its hypothesis's bound.
func TestIntegration_ReplayIL0206(t *testing.T) {
	r := replayIL0206(t, il0206At(t, "ci"))
	assertIL0206Vulnerable(t, r)
	assertIL0206Mitigated(t, r, "mitigated-2x-limit")
	require.Zero(t, float64(r.Variant("mitigated-2x-limit").Metrics["agents.oom_kills"]))
	require.Equal(t, 200.0, r.Variant("mitigated-2x-limit").Limits["agent.memory_mb"].Value)
}

// TestIntegration_ReplayIL0206Full replays every variant as written: the
// later discovery code holds through the same OOM kills. Three variants
// of 80 s: the release tier.
func TestIntegration_ReplayIL0206Full(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0206 (the ci size: the incident and the doubled limit)")
	r := replayIL0206(t, il0206At(t, ""))
	assertIL0206Vulnerable(t, r)
	for _, name := range []string{"mitigated-later-code", "mitigated-2x-limit"} {
		assertIL0206Mitigated(t, r, name)
	}
	require.GreaterOrEqual(t, float64(r.Variant("mitigated-later-code").Metrics["agents.oom_kills"]), 3.0, "the later code holds through the same OOM kills")
	require.Zero(t, float64(r.Variant("mitigated-2x-limit").Metrics["agents.oom_kills"]))
}

// replayIL0206 runs s with seed 1 on the local placement: it must
// reproduce, leave nothing behind, and load back to the same verdict.
func replayIL0206(t *testing.T, s *scenarios.Scenario) *reports.Report {
	t.Helper()
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: labtest.RunDir(t), Placement: "local", Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	t.Log(reports.Summary(r))
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.True(t, r.ExpectationMet)
	back, err := reports.Load(r.Dir)
	require.NoError(t, err)
	v, _, err := back.Recheck()
	require.NoError(t, err)
	require.Equal(t, r.Verdict, v)
	labtest.NoProcessNaming(t, r.Dir)
	labtest.NoCgroups(t, r.Scenario.ID)
	return r
}

func assertIL0206Vulnerable(t *testing.T, r *reports.Report) {
	t.Helper()
	vul := r.Variant("vulnerable")
	require.NotNil(t, vul)
	require.GreaterOrEqual(t, float64(vul.Metrics["agents.oom_kills"]), 3.0, "the agents OOM-killed by the kernel, again and again")
	require.GreaterOrEqual(t, float64(vul.Metrics["app.primary_read_share.during_faults"]), 2*il0206ShareBound, "reads at the primary, 2x past reads-on-replicas")
	require.Greater(t, float64(vul.Metrics["pods.lookups_empty"]), 0.0, "empty answers emptied the 2022 host lists")
	require.Equal(t, 100.0, vul.Limits["agent.memory_mb"].Value, "the agents' limit drawn across their memory chart")
	require.GreaterOrEqual(t, float64(vul.Metrics["agents.memory_mb.max"]), 50.0, "the agents' memory sampled, climbing toward the limit")
}

func assertIL0206Mitigated(t *testing.T, r *reports.Report, name string) {
	t.Helper()
	m := r.Variant(name)
	require.NotNil(t, m, name)
	require.LessOrEqual(t, float64(m.Metrics["app.primary_read_share.during_faults"]), il0206ShareBound/2, name)
	require.LessOrEqual(t, float64(m.Metrics["app.read_p99_ms.during_faults"]), il0206P99Bound/2.0, name)
}
