package scenarios_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	"github.com/chaoslab/chaoslab/scenarios"
)

const sized = small + `sizes:
  ci:
    description: Two clients, a shorter warm-up and stall.
    workload:
      clients: 2
    timeline:
      warmup: 10s
      faults:
        - step: 1
          duration: 5s
    variants:
      mitigated:
        workload:
          window: 4
    bounds:
      - hypothesis: no-client-oom
        threshold: 1
        why: A test of a restated bound.
    run: [mitigated]
`

// A size lays its settings over the scenario's and the variants', and
// changes nothing it does not name; what is judged stays the scenario's.
func TestSizedLaysItsSettingsOver(t *testing.T) {
	s, err := scenarios.Parse("sized.yaml", []byte(sized))
	require.NoError(t, err)
	require.Equal(t, []string{"ci"}, s.SizeNames())
	require.Empty(t, s.Size)

	ci, err := s.Sized("ci")
	require.NoError(t, err)
	require.Equal(t, "ci", ci.Size)
	require.Equal(t, 10*time.Second, ci.Timeline.Warmup.D())
	require.Equal(t, 5*time.Second, ci.Timeline.Faults[0].Duration.D())
	require.Equal(t, "leader", ci.Timeline.Faults[0].Target, "what the size does not name stays")
	require.Equal(t, 30*time.Second, ci.Timeline.Observe.D())
	require.Equal(t, 45*time.Second, ci.RunLength())
	require.Equal(t, 75*time.Second, s.RunLength(), "the scenario itself is unchanged")
	require.Equal(t, 1.0, ci.Hypotheses[0].Threshold, "the bound restated at the size")
	require.Equal(t, 0.0, s.Hypotheses[0].Threshold)
	require.Equal(t, s.Hypotheses[0].Metric, ci.Hypotheses[0].Metric)
	require.Equal(t, s.Comparisons, ci.Comparisons)

	for name, want := range map[string]struct{ clients, window int }{"vulnerable": {2, 0}, "mitigated": {2, 4}} {
		st, err := ci.WorkloadFor(name)
		require.NoError(t, err)
		w := st.(*zkmirror.Settings)
		require.Equal(t, want.clients, w.Clients, name)
		if want.window > 0 {
			require.Equal(t, want.window, w.Window, name)
		}
		full, err := s.WorkloadFor(name)
		require.NoError(t, err)
		require.Equal(t, 4, full.(*zkmirror.Settings).Clients, name)
	}

	require.Equal(t, []string{"mitigated"}, ci.DefaultVariants())
	require.Equal(t, []string{"vulnerable", "mitigated"}, s.DefaultVariants())

	same, err := ci.Sized("ci")
	require.NoError(t, err)
	require.Same(t, ci, same)
	_, err = ci.Sized("other")
	require.ErrorContains(t, err, "already at size ci")
	_, err = s.Sized("nightly")
	require.ErrorContains(t, err, `no size "nightly" (sizes: ci)`)
}

// Every built-in scenario has a ci size, shorter than the scenario.
func TestBuiltinsHaveACISize(t *testing.T) {
	all, err := scenarios.Builtin()
	require.NoError(t, err)
	for _, s := range all {
		ci, err := s.Sized("ci")
		require.NoError(t, err, s.ID)
		require.Less(t, ci.RunLength(), s.RunLength(), s.ID)
		require.NotEmpty(t, s.Sizes["ci"].Description, s.ID)
	}
}
