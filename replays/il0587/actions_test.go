package il0587_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/replays/replaytest"
	"github.com/chaoslab/chaoslab/scenarios"
)

// switch-strategy on real tree mirrors (IL-0587's vulnerable variant at 4
// clients, a small tree): taken from the dashboard's queue once the
// mirrors are loaded, every running client (a process of chaoslab's
// agent) reads its control file and reports the paced strategy within a
// few seconds, without a restart.
func TestIntegration_SwitchStrategyWhileRunning(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts real ZooKeeper servers and clients (skipped with -short)")
	}
	text, err := scenarios.ReadBuiltin("il-0587-zk-treecache-reconnect-storm.yaml")
	require.NoError(t, err)
	y := string(text)
	for _, e := range [][2]string{
		{"  clients: 12\n", "  clients: 4\n"}, {"  start_spread: 12s\n", "  start_spread: 0s\n"},
		{"fanout: [30, 200]", "fanout: [10, 20]"}, {"  warmup: 35s\n", "  warmup: 8s\n"},
		{"  observe: 30s\n", "  observe: 4s\n"}, {"      duration: 15s\n", "      duration: 6s\n"},
	} {
		require.Contains(t, y, e[0])
		y = strings.Replace(y, e[0], e[1], 1)
	}
	s, err := scenarios.Parse("il-0587-actions.yaml", []byte(y))
	require.NoError(t, err)

	ctl := gameday.NewControls(nil)
	a, err := gameday.ActRequest{Fault: "switch-strategy", Target: "clients", Duration: "5s", Author: "test"}.Action()
	require.NoError(t, err)
	onEvent := func(_ string, e lab.Event) {
		if e.Kind == "steady" {
			require.NoError(t, ctl.Act(a))
		}
	}
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: labtest.RunDir(t), Placement: "local", Variants: []string{"vulnerable"},
		AgentBinary: replaytest.ChaoslabBinary(t), Logger: labtest.Logger(t), Rerun: "test", Steer: ctl, OnEvent: onEvent})
	require.NoError(t, err)
	replaytest.AssertCleanedUp(t, r)
	v := r.Variant("vulnerable")
	require.NotNil(t, v)
	var got []string
	for _, e := range v.Events {
		if e.Kind == "strategy" {
			got = append(got, e.Source+": "+e.Detail)
		}
	}
	t.Log(strings.Join(got, "\n"))
	require.Len(t, got, 4)
	for _, g := range got {
		require.Regexp(t, `^client-0[1-4]: switched from full-refresh to paced \(window 8\), reported after [0-9.]+s$`, g)
	}
}
