package examples_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// TestIntegration_EtcdRetryAtOnceIsCaught: a reader on Python's standard
// library against real etcd, which lists no client connections: the
// relay in front of each instance counts what the members received. While
// the followers are stopped, asking again at each 0.4 s timeout sends
// about 2.5 requests a second; backing off about 0.3 (seeds 1-5: 2.47-2.53
// and 0.32 each); the bound is 1.
func TestIntegration_EtcdRetryAtOnceIsCaught(t *testing.T) {
	labtest.SkipUnlessCgroups(t, "a real etcd cluster and a client's processes", "the client's memory limit")
	t.Chdir("..") // the scenario names its command from the repository's root
	r := labtest.Run(t, "examples/exec-etcd-quorum-loss.yaml", labtest.Seed(1), labtest.Placement("local"))
	require.NotNil(t, r)
	t.Log(reports.Summary(r))
	require.Equal(t, verdict.Reproduced, r.Verdict)
	const rate = "rate(client.server_requests)@during-faults"
	for _, v := range r.Variants {
		got := float64(v.Metrics[rate])
		switch v.Name {
		case "retry-at-once":
			require.GreaterOrEqual(t, got, 2.0, "retry-at-once: %s", rate)
		case "backoff":
			require.LessOrEqual(t, got, 0.5, "backoff: %s", rate)
			require.GreaterOrEqual(t, float64(v.Metrics["max(client.reads_total)@after-faults"]), 40.0, "2x over its bound: it reads again")
		}
		require.Positive(t, float64(v.Metrics["clients.requests.total"]), "the relay counted requests")
		served := 0.0
		for _, s := range v.Series {
			if s.Name == "server.requests" && len(s.Points) > 0 {
				served += float64(s.Points[len(s.Points)-1].V)
			}
		}
		require.Positive(t, served, "the members' own count of the calls they started (server.requests)")
	}
}
