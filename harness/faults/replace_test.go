package faults

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// gateTarget is replaced at once and passes its gate after passAfter
// probes (never when negative); it records its events.
type gateTarget struct {
	*procTarget
	passAfter int

	mu       sync.Mutex
	replaced int
	probes   int
	events   []string
}

func (g *gateTarget) Replace(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.replaced++
	return nil
}

func (g *gateTarget) GateCheck(_ context.Context, gate string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probes++
	if g.passAfter >= 0 && g.probes > g.passAfter {
		return nil
	}
	return errors.New(gate + ": not yet")
}

func (g *gateTarget) Event(kind, source, detail string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, kind+" "+source+": "+detail)
}

func (g *gateTarget) log() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.events, "\n")
}

func problemText(ps []lab.Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Field+": "+p.Msg)
	}
	return strings.Join(out, "\n")
}

func TestReplaceParams(t *testing.T) {
	r := MustNew("replace").(*Replace)
	require.Equal(t, GateNone, r.Gate, "no gate unless asked: the replacement alone, as before")
	require.Equal(t, OnTimeoutProceed, r.OnTimeout)
	require.Equal(t, 60*time.Second, r.GateTimeout.D())
	require.Empty(t, r.Check())

	bad := &Replace{StartTimeout: Duration(time.Minute), Gate: "thorough", GateTimeout: Duration(time.Minute), OnTimeout: "panic"}
	got := problemText(bad.Check())
	require.Contains(t, got, `gate: want none, shallow or deep, got "thorough"`)
	require.Contains(t, got, `on_timeout: want proceed or stop, got "panic"`)

	short := &Replace{StartTimeout: Duration(time.Minute), Gate: GateDeep, GateTimeout: Duration(time.Millisecond), OnTimeout: OnTimeoutStop}
	require.Contains(t, problemText(short.Check()), "gate_timeout: 1ms is below 1s")
	short.Gate = GateNone
	require.Empty(t, short.Check(), "no gate, no gate timeout to check")
}

// A replacement with a gate is a procedure's step that gates itself: the
// runner does not wait for a healthy cluster around it (that wait would be
// a deep gate the vulnerable procedure does not have).
func TestReplaceSelfGated(t *testing.T) {
	r := MustNew("replace").(*Replace)
	var f Fault = r
	g, ok := f.(SelfGated)
	require.True(t, ok)
	require.False(t, g.SelfGated(), "no gate: the runner's health checks around it")
	r.Gate = GateShallow
	require.True(t, g.SelfGated())
	r.Gate = GateDeep
	require.True(t, g.SelfGated())
}

func TestReplaceAvailable(t *testing.T) {
	r := MustNew("replace").(*Replace)
	require.ErrorContains(t, r.Available(newProcTarget(t)), "cannot be replaced")
	require.NoError(t, r.Available(&gateTarget{procTarget: newProcTarget(t)}))
}

func TestReplaceGatePasses(t *testing.T) {
	g := &gateTarget{procTarget: newProcTarget(t), passAfter: 2}
	r := &Replace{StartTimeout: Duration(time.Minute), Gate: GateDeep, GateTimeout: Duration(10 * time.Second), OnTimeout: OnTimeoutStop}
	require.NoError(t, r.Inject(context.Background(), g, 0))
	require.Equal(t, 1, g.replaced)
	require.Equal(t, 3, g.probes)
	require.Contains(t, g.log(), "replace sleep: sleep replaced with an empty data dir")
	require.Contains(t, g.log(), "gate sleep: deep gate passed by sleep after")
}

func TestReplaceGateTimesOut(t *testing.T) {
	for _, onTimeout := range []string{OnTimeoutProceed, OnTimeoutStop} {
		t.Run(onTimeout, func(t *testing.T) {
			g := &gateTarget{procTarget: newProcTarget(t), passAfter: -1}
			r := &Replace{StartTimeout: Duration(time.Minute), Gate: GateShallow, GateTimeout: Duration(time.Second), OnTimeout: onTimeout}
			began := time.Now()
			err := r.Inject(context.Background(), g, 0)
			require.Less(t, time.Since(began), 3*time.Second)
			require.Contains(t, g.log(), "shallow gate NOT passed by sleep within 1s (shallow: not yet): the procedure ")
			if onTimeout == OnTimeoutStop {
				require.ErrorIs(t, err, lab.ErrStopTimeline)
				require.Contains(t, g.log(), "the procedure stops")
				return
			}
			require.NoError(t, err)
			require.Contains(t, g.log(), "the procedure proceeds")
		})
	}
}
