package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/docker"
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
