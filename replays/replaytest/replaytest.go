// Package replaytest holds what the replay tests of every incident
// share: the chaoslab binary the clients' agents run as, a built-in
// scenario at one of its sizes, and the checks that a run left nothing.
package replaytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/labtest"
	_ "github.com/chaoslab/chaoslab/harness/plugins" // every kind, system, placement and fault
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// Main builds what a replay package's integration tests run (once per
// machine, outside their timeout) and runs them, taking turns with the
// other packages' integration tests (labtest.Main).
func Main(m *testing.M) { labtest.Main(m, labtest.Chaoslab, labtest.Etcd, labtest.Consul) }

// ChaoslabBinary is the CLI the harness starts as the client processes
// (`chaoslab agent ...`).
func ChaoslabBinary(t *testing.T) string {
	t.Helper()
	bin, err := labtest.ChaoslabBinary()
	require.NoError(t, err, "build chaoslab")
	return bin
}

// Builtin is a built-in scenario at one of its sizes ("": as written).
func Builtin(t *testing.T, id, size string) *scenarios.Scenario {
	t.Helper()
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	s, err := scenarios.Find(id)
	require.NoError(t, err)
	s, err = s.Sized(size)
	require.NoError(t, err)
	return s
}

// AssertCleanedUp checks that nothing of the run is left: no process whose
// command line names the run folder, no cgroup of the run.
func AssertCleanedUp(t *testing.T, r *reports.Report) {
	t.Helper()
	labtest.NoProcessNaming(t, r.Dir)
	labtest.NoCgroups(t, r.Scenario.ID)
}

// SkipUnlessDockerImages skips when the docker placement cannot run the
// scenario here (no engine, images missing).
func SkipUnlessDockerImages(t *testing.T, s *scenarios.Scenario) {
	t.Helper()
	if err := runner.Preflight(context.Background(), s, runner.Options{Placement: "docker", Logger: labtest.Logger(t)}); err != nil {
		t.Skipf("docker placement not available here: %v", err)
	}
}
