package scenarios_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

// A new scenario's skeleton validates as written for every kind on every
// system it runs against, and shows each of the kind's settings.
func TestSkeletonValidatesForEveryKind(t *testing.T) {
	withSeeds(t)
	n := 0
	for _, kind := range lab.KindNames() {
		k, err := lab.GetKind(kind)
		require.NoError(t, err)
		for _, sys := range k.Systems() {
			text, err := scenarios.Skeleton(scenarios.SkeletonOptions{Case: "IL-0587", System: sys, Kind: kind, ID: "my-" + kind})
			require.NoError(t, err, "%s on %s", kind, sys)
			_, err = scenarios.Parse(kind+"-"+sys+".yaml", text)
			require.NoError(t, err, "%s on %s:\n%s", kind, sys, text)
			require.Contains(t, string(text), "kind: "+kind)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 7, "every kind, on each of its systems")
	_, err := scenarios.Skeleton(scenarios.SkeletonOptions{Case: "IL-0587", System: "consul", Kind: "zk-tree-mirror", ID: "x"})
	require.ErrorContains(t, err, "the zk-tree-mirror kind runs against zookeeper, not consul")
}

// Uncommenting a nested setting keeps the YAML whole: a nested setting
// stands under its parent's key.
func TestSkeletonNestsSettings(t *testing.T) {
	withSeeds(t)
	text, err := scenarios.Skeleton(scenarios.SkeletonOptions{Case: "IL-0587", System: "zookeeper", Kind: "zk-tree-mirror", ID: "x"})
	require.NoError(t, err)
	s := string(text)
	require.Contains(t, s, "  # tree:\n  #   path: /chaoslab/tree")
	edited := strings.Replace(s, "  # tree:\n  #   path: /chaoslab/tree", "  tree:\n    path: /chaoslab/mine", 1)
	_, err = scenarios.Parse("x.yaml", []byte(edited))
	require.NoError(t, err)
}
