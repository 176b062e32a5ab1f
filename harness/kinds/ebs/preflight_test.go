package ebs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// unreachable is a placement whose programs cannot reach the lab's own
// listeners (the kubernetes placement).
type unreachable struct{ lab.Placement }

func (unreachable) Name() string { return "kubernetes" }
func (unreachable) ReachesController() error {
	return errors.New("no route to the lab")
}

// The storage nodes need the lab's link proxies: a placement whose
// programs cannot reach them is refused before anything starts.
func TestPreflightRefusesAPlacementWithoutARouteToTheLab(t *testing.T) {
	err := kind{}.Preflight(unreachable{}, kind{}.NewSettings())
	require.ErrorContains(t, err, "no route to the lab")
}
