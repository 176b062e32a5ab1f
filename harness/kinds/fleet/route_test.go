package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// members is a registry that holds fixed registrations.
type members map[string]frontend.Member

func (m members) Member(_ context.Context, id string) (frontend.Member, bool, error) {
	r, ok := m[id]
	return r, ok, nil
}

// hostProc is a running program reached at one host.
type hostProc struct{ lab.Proc }

func (hostProc) Host() string { return "127.0.0.1" }

// A server whose route line never came is reached at the port of its
// registration, once the registration is its running incarnation's and
// the line is late; the timeline says the harness read it there.
func TestRouteReadFromTheRegistrationWhenTheLineIsLate(t *testing.T) {
	reg := members{"fe-01": {ID: "fe-01", Route: "10.0.0.7:4100", Incarnation: 1}}
	var events []lab.Event
	f := &Fleet{cfg: Config{Settings: &Settings{}, Registry: reg, Env: &lab.Env{OnEvent: func(e lab.Event) { events = append(events, e) }}}}
	s := &Server{ID: "fe-01", f: f, proc: hostProc{}, running: 1, started: time.Now()}
	require.Empty(t, f.learnRoute(context.Background(), s), "within routeWait the line may still come")

	s.started = time.Now().Add(-2 * routeWait)
	s.running = 2
	require.Empty(t, f.learnRoute(context.Background(), s), "an earlier incarnation's registration is not this one's route")

	s.running = 1
	require.Equal(t, "127.0.0.1:4100", f.learnRoute(context.Background(), s))
	require.Equal(t, "127.0.0.1:4100", s.Route())
	require.Equal(t, 1, s.Snapshot().RoutesRead)
	require.Len(t, events, 1)
	require.Contains(t, events[0].Detail, "read port 4100 from its registration")

	s.port = ""
	f.cfg.Program = &lab.ClientProgram{}
	require.Empty(t, f.learnRoute(context.Background(), s), "a user's program need not register its route")
}
