package zookeeper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)

// zkServer is a server whose zoo.cfg is a number; it syncs after gates
// failed probes.
type zkServer struct {
	lab.Target
	limit, restarts, gates int
	restartErr             error
	events                 []string
}

func (z *zkServer) Name() string                  { return "zk4" }
func (z *zkServer) InitLimit() (int, error)       { return z.limit, nil }
func (z *zkServer) SetInitLimit(ticks int) error  { z.limit = ticks; return nil }
func (z *zkServer) Restart(context.Context) error { z.restarts++; return z.restartErr }
func (z *zkServer) Event(kind, _, detail string)  { z.events = append(z.events, kind+": "+detail) }
func (z *zkServer) GateCheck(context.Context, string) error {
	if z.gates > 0 {
		z.gates--
		return errors.New("not synced yet")
	}
	return nil
}

func raiseInitLimit(t *testing.T, params string) (*zookeeper.RaiseInitLimit, error) {
	t.Helper()
	f := faults.MustNew("raise-init-limit").(*zookeeper.RaiseInitLimit)
	err := faults.DecodeParams(f, params)
	return f, err
}

// raise-init-limit's parameters: 30 ticks by default, 1 to 10000; a start
// timeout of at least 1 s.
func TestRaiseInitLimitParams(t *testing.T) {
	f, err := raiseInitLimit(t, "{}")
	require.NoError(t, err)
	require.Equal(t, 30, f.Ticks)
	require.Equal(t, time.Minute, f.StartTimeout.D())
	f, err = raiseInitLimit(t, "ticks: 50\nstart_timeout: 90s")
	require.NoError(t, err)
	require.Equal(t, 50, f.Ticks)
	require.Equal(t, 90*time.Second, f.StartTimeout.D())
	for in, want := range map[string]string{
		"ticks: 0":            "ticks: want 1 to 10000",
		"ticks: 20000":        "ticks: want 1 to 10000",
		"start_timeout: 10ms": "start_timeout",
	} {
		_, err := raiseInitLimit(t, in)
		require.ErrorContains(t, err, want, in)
	}
	_, err = raiseInitLimit(t, "ticks: many")
	require.Error(t, err)
	require.Equal(t, "raise-init-limit", faults.ResponderKind("raise-init-limit", "observers"))
}

// The limit is rewritten before the restart, kept after it, and the
// timeline says how long the server took to sync; a failed restart is an
// error; a target without a zoo.cfg of the lab's is refused.
func TestRaiseInitLimitRestarts(t *testing.T) {
	z := &zkServer{limit: 1, gates: 2}
	f := faults.MustNew("raise-init-limit")
	require.NoError(t, f.Available(z))
	require.NoError(t, f.Inject(context.Background(), z, 5*time.Second))
	require.Equal(t, 30, z.limit)
	require.Equal(t, 1, z.restarts)
	require.Len(t, z.events, 1)
	require.Regexp(t, `^init-limit: initLimit 30 ticks \(was 1\); restarted, serving after [0-9.]+s; synced with the leader after [0-9.]+s$`, z.events[0])

	z = &zkServer{limit: 1, gates: 1 << 30}
	require.NoError(t, f.Inject(context.Background(), z, 600*time.Millisecond))
	require.Contains(t, z.events[0], "not synced within 600ms: not synced yet")

	z = &zkServer{limit: 1, restartErr: errors.New("no JVM")}
	require.ErrorContains(t, f.Inject(context.Background(), z, time.Second), "restart zk4: no JVM")
	require.Contains(t, z.events[0], "the restart failed")
	require.ErrorContains(t, f.Available(notMember{}), "not a ZooKeeper server")
}

// notMember is a target with none of the capability.
type notMember struct{ lab.Target }

func (notMember) Name() string { return "agent-1" }
