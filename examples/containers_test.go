package examples_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/tier"
)

// pythonImage returns the python image's reference, built when it is
// missing or out of date (the examples it holds changed); it skips the
// test when no Docker engine answers.
func pythonImage(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	opts := images.Options{Only: []string{"python"}, Logger: slog.New(slog.DiscardHandler), Progress: labtest.Writer{T: t}}
	res, err := images.ListWith(ctx, opts)
	if len(res) == 0 {
		t.Skipf("no Docker engine answers: %v", err)
	}
	require.NoError(t, err)
	if !res[0].Present || !res[0].Current {
		_, err := images.Build(ctx, opts)
		require.NoError(t, err, "build the python image")
	}
	return images.PythonRef
}

// TestIntegration_TreeCacheIsCaughtInAContainer: kazoo's TreeCache run as
// containers of the python image on the docker placement is caught as it
// is as local processes: the refresh storm and the backlog are counted
// by the servers (cons), whatever the client runs in.
func TestIntegration_TreeCacheIsCaughtInAContainer(t *testing.T) {
	tier.Release(t, "TestIntegration_TreeCacheIsCaught (the same program as local processes)")
	ref := pythonImage(t)
	rec := &recorder{T: t}
	r := labtest.Run(rec, scenario, labtest.ClientImage(ref),
		labtest.Client("python3", images.PythonExamplesDir+"/zk-treecache-python/treecache.py"),
		labtest.Placement("docker"), labtest.Seed(1), labtest.Size("ci"))
	v := requireCaught(t, rec, r, "no-refresh-storm")
	// Measured, seed 1: 1.54 requests per znode per reconnect (threshold
	// 0.35), 162 requests of one client unanswered at the servers (40),
	// the servers' own backlog 599.
	require.GreaterOrEqual(t, float64(v.Metrics["clients.requests_per_znode_per_reconnect"]), 0.7, "2x past 0.35")
	require.GreaterOrEqual(t, float64(v.Metrics["clients.server_outstanding.max_from_fault"]), 80.0, "2x past 40")
}
