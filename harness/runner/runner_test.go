package runner

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

// A variant's run id fits the engine's limits, whatever the names.
func TestVariantRunID(t *testing.T) {
	at := time.Unix(1796175811, 0)
	id := variantRunID("il-0384-kinesis-thread-per-peer", "vulnerable-slow-restart", at)
	require.NoError(t, docker.CheckRunID(id))
	require.Equal(t, "il-0384-kinesis-thread-per-p-vulnerable-slow-restart-1796175811", id)
	require.LessOrEqual(t, len(id), 63)
	short := variantRunID("il-0587-zk", "mitigated", at)
	require.Equal(t, "il-0587-zk-mitigated-1796175811", short)
}

// A client command of this host cannot run on a container placement: the
// run is refused before anything starts, and says what to give instead.
func TestHostClientOnDockerRefused(t *testing.T) {
	scenarios.CaseChecker = nil
	s, err := scenarios.Find("il-0587-zk-treecache-reconnect-storm")
	require.NoError(t, err)
	out := t.TempDir()
	_, err = Run(context.Background(), s, Options{Placement: "docker", OutDir: out, Client: &lab.ClientProgram{Command: []string{"./my-client"}}})
	require.ErrorContains(t, err, "--client-image")
	entries, _ := os.ReadDir(out)
	require.Empty(t, entries, "nothing started, nothing written")
}

// What a relay of the lab's counts per client on etcd runs on this host
// only: on containers such a hypothesis is refused before anything starts.
func TestRelayedFiguresOnDockerRefused(t *testing.T) {
	scenarios.CaseChecker = nil
	s, err := scenarios.Load("../../examples/exec-etcd-quorum-loss.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"rate(client.server_requests)@during-faults"}, s.ServerViewMetrics())
	out := t.TempDir()
	_, err = Run(context.Background(), s, Options{Placement: "docker", OutDir: out,
		Client: &lab.ClientProgram{Image: "my-client:1"}})
	require.ErrorContains(t, err, "rate(client.server_requests)@during-faults: etcd counts them per client with a relay")
	require.ErrorContains(t, err, "--placement local")
	entries, _ := os.ReadDir(out)
	require.Empty(t, entries, "nothing started, nothing written")
}
