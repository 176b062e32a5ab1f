package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

// A fault that ends after the planned end still gets the scenario's whole
// observation after it; one that ends in time leaves the end where it was.
func TestObserveWholeAfterLateFault(t *testing.T) {
	s := &scenarios.Scenario{}
	s.Timeline.Observe = lab.Duration(20 * time.Second)
	t0 := time.Now().Add(-time.Minute)
	v := &variant{p: &plan{s: s}, env: &lab.Env{T0: t0}}
	var events []string
	v.env.OnEvent = func(e lab.Event) { events = append(events, e.Detail) }

	planned := time.Now().Add(30 * time.Second)
	require.Equal(t, planned, v.observeWhole(planned), "in time: the planned end stays")
	require.Empty(t, events)

	planned = time.Now().Add(5 * time.Second)
	got := v.observeWhole(planned)
	require.WithinDuration(t, time.Now().Add(20*time.Second), got, time.Second)
	require.InDelta(t, got.Sub(t0).Seconds(), v.tl.End, 0.01, "the timeline's end moved with it")
	require.Len(t, events, 1)
	require.Contains(t, events[0], "15s later")
}
