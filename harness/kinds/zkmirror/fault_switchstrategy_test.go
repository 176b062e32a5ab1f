package zkmirror_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// mirror is a client that reports the strategy it was told after lag.
type mirror struct {
	lab.Target
	mu       sync.Mutex
	strategy string
	told     time.Time
	want     string
	lag      time.Duration
	events   []string
}

func (m *mirror) Name() string { return "client-01" }
func (m *mirror) CheckSwitch(s string, w int) error {
	if s != "paced" && s != "full-refresh" {
		return errors.New("strategy: want full-refresh or paced")
	}
	return nil
}
func (m *mirror) SwitchStrategy(s string, _ int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.want, m.told = s, time.Now()
	return nil
}
func (m *mirror) Strategy() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.want != "" && time.Since(m.told) >= m.lag {
		m.strategy = m.want
	}
	return m.strategy
}
func (m *mirror) Event(kind, _, detail string) { m.events = append(m.events, kind+": "+detail) }

// switch-strategy's parameters: paced with a window of 8 by default (the
// IL-0587 mitigation); the kind says which strategies it has.
func TestSwitchStrategyParams(t *testing.T) {
	f := faults.MustNew("switch-strategy").(*zkmirror.SwitchStrategy)
	require.NoError(t, faults.DecodeParams(f, "{}"))
	require.Equal(t, "paced", f.Strategy)
	require.Equal(t, 8, f.Window)
	f = faults.MustNew("switch-strategy").(*zkmirror.SwitchStrategy)
	require.NoError(t, faults.DecodeParams(f, "strategy: full-refresh\nwindow: 2"))
	require.Equal(t, "full-refresh", f.Strategy)
	require.Equal(t, 2, f.Window)
	for in, want := range map[string]string{"strategy: ''": "strategy: want a strategy", "window: 0": "window: want at least 1"} {
		f = faults.MustNew("switch-strategy").(*zkmirror.SwitchStrategy)
		require.ErrorContains(t, faults.DecodeParams(f, in), want, in)
	}
	f = faults.MustNew("switch-strategy").(*zkmirror.SwitchStrategy)
	require.NoError(t, faults.DecodeParams(f, "strategy: jittered"))
	require.ErrorContains(t, f.Available(&mirror{}), "want full-refresh or paced", "the kind refuses what it does not have")
	require.ErrorContains(t, f.Available(notMember{}), "not a client whose strategy the lab can switch (supported: zk-tree-mirror clients)")
}

// The fault waits for the client to report the new strategy and records
// how long it took, or that it did not within the duration.
func TestSwitchStrategyWaitsForTheReport(t *testing.T) {
	f := faults.MustNew("switch-strategy")
	m := &mirror{strategy: "full-refresh", lag: 300 * time.Millisecond}
	require.NoError(t, f.Available(m))
	require.NoError(t, f.Inject(context.Background(), m, 5*time.Second))
	require.Regexp(t, `^strategy: switched from full-refresh to paced \(window 8\), reported after 0\.[3-9]s$`, m.events[0])

	m = &mirror{strategy: "full-refresh", lag: time.Hour}
	require.NoError(t, f.Inject(context.Background(), m, time.Second))
	require.Equal(t, `strategy: switch to paced (window 8) asked; client-01 still reports "full-refresh" after 1s`, m.events[0])
}

// notMember is a target with none of the capability.
type notMember struct{ lab.Target }

func (notMember) Name() string { return "agent-1" }
