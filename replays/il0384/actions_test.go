package il0384_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/replays/replaytest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

// il0384Small is IL-0384's vulnerable fleet at 8 servers under a thread
// limit it does not reach, with the timeline given.
func il0384Small(t *testing.T, timeline string) *scenarios.Scenario {
	t.Helper()
	text, err := scenarios.ReadBuiltin("il-0384-kinesis-thread-per-peer.yaml")
	require.NoError(t, err)
	y := string(text)
	start := strings.Index(y, "timeline:\n")
	end := strings.Index(y, "variants:\n")
	require.Positive(t, start)
	y = y[:start] + timeline + y[end:]
	// The sizes restate the timeline this test replaces: they go with it.
	if i := strings.Index(y, "\nsizes:\n"); i >= 0 {
		y = y[:i+1]
	}
	for _, e := range [][2]string{
		{"  servers: 32\n", "  servers: 8\n"}, {"  start_spread: 48s\n", "  start_spread: 4s\n"},
		{"  add_fraction: 0.1\n", "  add_fraction: 0.5\n"}, {"  thread_limit: 40\n", "  thread_limit: 80\n"},
		{"  learn_spread: 8s\n", "  learn_spread: 2s\n"},
	} {
		require.Contains(t, y, e[0])
		y = strings.Replace(y, e[0], e[1], 1)
	}
	s, err := scenarios.Parse("il-0384-actions.yaml", []byte(y))
	require.NoError(t, err)
	return s
}

var threadsRe = regexp.MustCompile(`most (\d+) \(was (\d+)\), mean ([\d.]+) \(was ([\d.]+)\)`)

// remove-capacity on a real fleet (8 servers, 4 added, a thread per peer),
// taken as an operator's action while the addition lasts: once the added servers are gone every remaining server holds fewer
// threads, as many fewer as peers it lost, and the timeline says so.
func TestIntegration_RemoveCapacityLowersThreads(t *testing.T) {
	skipUnlessFleet(t)
	s := il0384Small(t, `timeline:
  warmup: 10s
  faults:
    - at: 0s
      fault: add-capacity
      target: fleet
      duration: 20s
  observe: 2s
`)
	// The operator removes the capacity 8 s into the addition, as from
	// the dashboard.
	ctl := gameday.NewControls(nil)
	a, err := gameday.ActRequest{Fault: "remove-capacity", Target: "fleet", Duration: "10s", Author: "test"}.Action()
	require.NoError(t, err)
	onEvent := func(_ string, e lab.Event) {
		if e.Kind == "fault" && strings.HasPrefix(e.Detail, "add-capacity") {
			time.AfterFunc(8*time.Second, func() { require.NoError(t, ctl.Act(a)) })
		}
	}
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: labtest.RunDir(t), Placement: "local", Variants: []string{"vulnerable"},
		AgentBinary: replaytest.ChaoslabBinary(t), Logger: labtest.Logger(t), Rerun: "test", Steer: ctl, OnEvent: onEvent})
	require.NoError(t, err)
	assertFleetCleanedUp(t, r)
	v := r.Variant("vulnerable")
	require.NotNil(t, v)
	var got []string
	for _, e := range v.Events {
		if e.Kind == "capacity" {
			got = append(got, e.Detail)
		}
	}
	t.Log(got)
	require.Len(t, got, 2)
	require.Contains(t, got[0], "removed 4 of 12 servers (fe-12, fe-11, fe-10, fe-09)")
	m := threadsRe.FindStringSubmatch(got[1])
	require.NotNil(t, m, got[1])
	// Each remaining server lost 4 peers: the fleet's mean falls by about
	// 4 (a server's last threads of a removed peer may end a few seconds
	// later: the busiest one had dropped 2 of 4 after 6 s in one run).
	after, before := atoi(t, m[1]), atoi(t, m[2])
	meanAfter, meanBefore := atof(t, m[3]), atof(t, m[4])
	require.Less(t, after, before, "the busiest server holds fewer threads")
	require.LessOrEqual(t, meanAfter, meanBefore-3, "4 peers fewer: their threads end")
	requireNoBadExit(t, v)
}

func atof(t *testing.T, s string) float64 {
	x, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return x
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// requireNoBadExit: no server ended but those the operator removed.
func requireNoBadExit(t *testing.T, v *reports.VariantResult) {
	t.Helper()
	for _, c := range v.Clients {
		for _, e := range c.Exits {
			require.Equal(t, "capacity removed by the operator", e.How, c.ID)
		}
	}
}
