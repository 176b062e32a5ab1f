package examples_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/tier"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// replacementScenario is IL-0277's ensemble and procedure judging the
// clients alone: the seed judges the procedure and refuses a program.
const replacementScenario = "examples/zk-replacement-clients.yaml"

// TestIntegration_TreeCacheIsCaughtThroughReplacement: kazoo's TreeCache,
// printing nothing, re-reads its whole mirror each time a member that has
// just synced takes its connection, and the servers' backlog says so.
func TestIntegration_TreeCacheIsCaughtThroughReplacement(t *testing.T) {
	tier.Release(t, "TestIntegration_TreeCacheIsCaught (the same program caught under IL-0587, by the same servers' view)")
	labtest.SkipUnlessZooKeeper(t)
	py := python(t)
	t.Chdir("..") // the scenario is named from the repository's root
	rec := &recorder{T: t}
	r := labtest.Run(rec, replacementScenario, labtest.Client(py, "examples/zk-treecache-python/treecache.py"),
		labtest.ClientEnv("CHAOSLAB_EXAMPLE_QUIET", "1"), labtest.Seed(1))
	v := requireCaught(t, rec, r, "servers-backlog-bounded")
	// The deciding figure, the servers' own backlog (mntr), 2x past its
	// bound of 12 (seeds 1-5: 43-243).
	require.GreaterOrEqual(t, float64(v.Metrics["servers.outstanding_requests.max_from_fault"]), 24.0)
}

// TestIntegration_PacedHoldsThroughReplacement: the paced Go client
// resumes its sessions and holds through the same procedure.
func TestIntegration_PacedHoldsThroughReplacement(t *testing.T) {
	tier.Release(t, "TestIntegration_PacedHoldsInCI (the same program under IL-0587)")
	labtest.SkipUnlessZooKeeper(t)
	client := pacedBinary(t)
	t.Chdir("..")
	r := labtest.Run(t, replacementScenario, labtest.Client(client), labtest.Seed(1))
	require.NotNil(t, r)
	t.Log(reports.Summary(r))
	v := r.Variants[0]
	require.Equal(t, verdict.Held, v.Verdict)
	require.LessOrEqual(t, float64(v.Metrics["servers.outstanding_requests.max_from_fault"]), 6.0, "2x inside 12 (seeds 1-5: 2-6)")
	require.Zero(t, float64(v.Metrics["clients.oom_kills"]))
}
