package runner

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

type noteSteer struct{ c chan Action }

func (s noteSteer) Wait(context.Context, string, time.Time, string) Go { return Go{OK: true} }
func (s noteSteer) Actions() <-chan Action                             { return s.c }

// A participant's note goes on the timeline with its author, and is no
// fault: no window is opened for it.
func TestNoteGoesOnTheTimeline(t *testing.T) {
	events := make(chan lab.Event, 4)
	st := noteSteer{c: make(chan Action, 1)}
	v := &variant{o: Options{Steer: st}, env: &lab.Env{T0: time.Now(), OnEvent: func(e lab.Event) { events <- e }}}
	wait := v.actions(context.Background(), nil, nil)
	st.c <- Action{Author: "carol (operator)", Note: "paged the database team"}
	e := <-events
	require.Equal(t, "note", e.Kind)
	require.Equal(t, "carol (operator)", e.Source)
	require.Equal(t, "paged the database team", e.Detail)
	require.Empty(t, wait(), "a note opens no fault window")
}

type stopSteer struct {
	noteSteer
	stop chan struct{}
}

func (s stopSteer) Stopped() <-chan struct{} { return s.stop }

// A fault's context ends at the emergency stop, and says it was that.
func TestFaultContextEndsAtEmergencyStop(t *testing.T) {
	st := stopSteer{noteSteer{make(chan Action)}, make(chan struct{})}
	v := &variant{o: Options{Steer: st}}
	ctx, stopped, cancel := v.faultCtx(context.Background())
	defer cancel()
	require.False(t, stopped())
	close(st.stop)
	<-ctx.Done()
	require.Eventually(t, stopped, time.Second, 10*time.Millisecond)
	// Without a stopper the context ends only with its parent.
	v = &variant{o: Options{Steer: st.noteSteer}}
	ctx, stopped, cancel = v.faultCtx(context.Background())
	cancel()
	<-ctx.Done()
	require.False(t, stopped())
}
