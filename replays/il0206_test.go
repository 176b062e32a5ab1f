package replays_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/pgcluster"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/verdict"
)

// il0206Small is the IL-0206 scenario with shorter windows (the trigger
// 25 s instead of 40 s): every variant's figures still decide.
func il0206Small(t *testing.T) *scenarios.Scenario {
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
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	text, err := scenarios.ReadBuiltin("il-0206-consul-agent-oom-primary-fallback.yaml")
	require.NoError(t, err)
	y := string(text)
	for _, e := range [][2]string{
		{"  warmup: 20s\n", "  warmup: 12s\n"}, {"      duration: 40s\n", "      duration: 25s\n"},
		{"  observe: 20s\n", "  observe: 8s\n"},
	} {
		require.Contains(t, y, e[0])
		y = strings.Replace(y, e[0], e[1], 1)
	}
	s, err := scenarios.Parse("il-0206-small.yaml", []byte(y))
	require.NoError(t, err)
	return s
}

// TestIntegration_ReplayIL0206 replays IL-0206 on real Consul agents and
// real PostgreSQL: under the scaled limit the agents are OOM-killed by
// the kernel and the 2022 load balancer sends most reads to the primary;
// the later discovery code, the doubled limit and GOMEMLIMIT each keep
// the reads on the replicas. Every deciding figure is at least 2x from
// its hypothesis's bound.
func TestIntegration_ReplayIL0206(t *testing.T) {
	s := il0206Small(t)
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: t.TempDir(), Placement: "local", Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	t.Log(reports.Summary(r))
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.True(t, r.ExpectationMet)

	const (
		shareBound = 0.2 // reads-on-replicas
		p99Bound   = 400 // read-p99, ms
	)
	vul := r.Variant("vulnerable")
	require.NotNil(t, vul)
	require.GreaterOrEqual(t, float64(vul.Metrics["agents.oom_kills"]), 3.0, "the agents OOM-killed by the kernel, again and again")
	require.GreaterOrEqual(t, float64(vul.Metrics["app.primary_read_share.during_faults"]), 2*shareBound, "reads at the primary, 2x past reads-on-replicas")
	require.Greater(t, float64(vul.Metrics["pods.lookups_empty"]), 0.0, "empty answers emptied the 2022 host lists")
	require.Equal(t, 100.0, vul.Limits["agent.memory_mb"].Value, "the agents' limit drawn across their memory chart")
	require.Equal(t, 200.0, r.Variant("mitigated-2x-limit").Limits["agent.memory_mb"].Value)
	require.GreaterOrEqual(t, float64(vul.Metrics["agents.memory_mb.max"]), 50.0, "the agents' memory sampled, climbing toward the limit")
	for _, name := range []string{"mitigated-later-code", "mitigated-2x-limit", "mitigated-gomemlimit"} {
		m := r.Variant(name)
		require.NotNil(t, m, name)
		require.LessOrEqual(t, float64(m.Metrics["app.primary_read_share.during_faults"]), shareBound/2, name)
		require.LessOrEqual(t, float64(m.Metrics["app.read_p99_ms.during_faults"]), p99Bound/2.0, name)
	}
	require.GreaterOrEqual(t, float64(r.Variant("mitigated-later-code").Metrics["agents.oom_kills"]), 3.0, "the later code holds through the same OOM kills")
	require.Zero(t, float64(r.Variant("mitigated-2x-limit").Metrics["agents.oom_kills"]))
	require.Zero(t, float64(r.Variant("mitigated-gomemlimit").Metrics["agents.oom_kills"]))

	back, err := reports.Load(r.Dir)
	require.NoError(t, err)
	v, _, err := back.Recheck(nil)
	require.NoError(t, err)
	require.Equal(t, r.Verdict, v)
	labtest.NoProcessNaming(t, r.Dir)
	labtest.NoCgroups(t, r.Scenario.ID)
}
