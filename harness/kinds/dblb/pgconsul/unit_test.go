package pgconsul

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
)

// A replica is critical when it does not answer, does not stream, or is
// behind on both bounds; passing otherwise (GitLab's rule).
func TestJudge(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name string
		l    pgcluster.Lag
		want string
	}{
		{"caught up", pgcluster.Lag{State: "streaming", CaughtUp: true, SinceReplay: time.Hour}, api.HealthPassing},
		{"few bytes, long ago", pgcluster.Lag{State: "streaming", Bytes: mb / 2, SinceReplay: time.Hour}, api.HealthPassing},
		{"many bytes, recent", pgcluster.Lag{State: "streaming", Bytes: 10 * mb, SinceReplay: time.Second}, api.HealthPassing},
		{"both over", pgcluster.Lag{State: "streaming", Bytes: 10 * mb, SinceReplay: time.Minute}, api.HealthCritical},
		{"many bytes, no replay since start", pgcluster.Lag{State: "streaming", Bytes: 10 * mb}, api.HealthCritical},
		{"not streaming", pgcluster.Lag{State: "", CaughtUp: true}, api.HealthCritical},
		{"no answer", pgcluster.Lag{State: "streaming", Err: errors.New("timeout")}, api.HealthCritical},
	} {
		got, out := Judge(tc.l, mb, 10*time.Second)
		require.Equal(t, tc.want, got, "%s: %s", tc.name, out)
	}
}

func TestOptionsCheck(t *testing.T) {
	o := options{service: DefaultService, maxBytes: DefaultMaxBytes, maxDelay: DefaultMaxDelay, every: DefaultEvery}
	require.NoError(t, o.check())
	bad := o
	bad.every = time.Millisecond
	require.ErrorContains(t, bad.check(), "below")
	bad = o
	bad.maxBytes = 0
	require.Error(t, bad.check())
	bad = o
	bad.service = ""
	require.Error(t, bad.check())
}
