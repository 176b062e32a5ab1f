package runner

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// The servers' samples become series (a member that did not answer is a
// gap, not a figure), role changes become events, and each round says
// whether a leader answered.
func TestSamplerRecord(t *testing.T) {
	ok := func(t float64, m, role string, out float64) lab.MemberSample {
		return lab.MemberSample{T: t, Member: m, OK: true, Role: role, Values: map[string]float64{"server.outstanding_requests": out}}
	}
	s := &sampler{rounds: [][]lab.MemberSample{
		{ok(1, "zk1", "leader", 5), ok(1.01, "zk2", "follower", 3), {T: 1, Member: "logs", OK: true, Values: map[string]float64{"ensemble.elections": 0}}},
		{{T: 2, Member: "zk1"}, ok(2.01, "zk2", "follower", 9)},
		{ok(3, "zk1", "follower", 1), ok(3.01, "zk2", "leader", 2)},
	}}
	r := &lab.Result{}
	s.record(r, []lab.SeriesDef{{Name: "server.outstanding_requests", Unit: "requests"}, {Name: "ensemble.elections", Unit: "elections"}})
	zk1 := r.SeriesFor("server.outstanding_requests", "zk1", "")
	require.Equal(t, "requests", zk1.Unit)
	require.Len(t, zk1.Points, 3)
	require.Equal(t, 5.0, float64(zk1.Points[0].V))
	require.True(t, math.IsNaN(float64(zk1.Points[1].V)), "no answer is a gap")
	var sources []string
	for _, sr := range r.Series {
		if sr.Name == "ensemble.elections" {
			sources = append(sources, sr.Source)
		}
	}
	require.Equal(t, []string{"logs"}, sources, "a member that does not answer is a gap only in the series it gives")
	leader := r.SeriesFor(lab.SeriesLeader, "cluster", "")
	var vals []float64
	for _, p := range leader.Points {
		vals = append(vals, float64(p.V))
	}
	require.Equal(t, []float64{1, 0, 1}, vals, "the leader did not answer in the second round")
	var states []string
	for _, e := range r.Events {
		states = append(states, e.Source+" "+e.Detail)
	}
	require.Equal(t, []string{"zk1 now leader", "zk2 now follower", "zk1 now follower", "zk2 now leader"}, states)
	// Time without a leader, as the pipeline's metric reduces it.
	red := lab.PipelineMetrics()[0].Reducer
	got, _ := red.Apply(r.Series, lab.Timeline{End: 4})
	require.InDelta(t, 1.0, got, 1e-9)
}
