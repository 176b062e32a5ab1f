// Package contract_test checks the contract every system keeps on every
// placement: a small cluster starts through the registries, every generic
// fault lands on one of its members (read back from the kernel or the
// engine, not from the lab's intent) and is undone, and the cluster is
// healthy again after each.
package contract_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/harness/systemtest"
	"github.com/chaoslab/chaoslab/record"
)

func TestMain(m *testing.M) { labtest.Main(m, labtest.Etcd, labtest.Consul) }

// The generic faults, each with what shows it landed while it lasts and
// that it was undone after.
var generic = []struct {
	fault  string
	params map[string]any
	during func(t *testing.T, m member)
	after  func(t *testing.T, m member)
}{
	{"pause", nil, statusIs(lab.StatePaused), statusIs(lab.StateRunning)},
	{"kill-restart", nil, statusIs(lab.StateExited), statusIs(lab.StateRunning)},
	{"stop", nil, statusIs(lab.StateExited), statusIs(lab.StateRunning)},
	{"cpu-throttle", map[string]any{"cores": 0.25}, cpuIs(0.25), cpuIs(0)},
	{"set-memory-limit", map[string]any{"mb": 900}, memoryIs(900), memoryIs(700)},
	{"disconnect", nil, dialFails(true), dialFails(false)},
	{"replace", nil, nil, statusIs(lab.StateRunning)},
}

// member is a cluster member that is a server of its placement.
type member interface {
	lab.Member
	State(ctx context.Context) (string, error)
	CPU() (float64, error)
	Memory() (int, error)
	SetMemory(mb int) error
	Disconnected() bool
	Addr(port string, v lab.View) string
	Layout() lab.ServerLayout
}

// Every system on every placement takes every generic fault.
func TestIntegration_GenericFaultsLand(t *testing.T) {
	labtest.SkipUnlessRoot(t)
	for _, sys := range lab.SystemNames() {
		for _, plc := range lab.PlacementNames() {
			t.Run(sys+"/"+plc, func(t *testing.T) {
				// Two at a time: what is checked is read back, not timed.
				t.Parallel()
				contract(t, sys, plc)
			})
		}
	}
}

func contract(t *testing.T, system, placement string) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, _ := start(t, ctx, system, placement)
	members := c.Members()
	target := members[len(members)-1].(member)
	for _, g := range generic {
		f, err := faults.New(g.fault)
		require.NoError(t, err)
		if g.params != nil {
			labtest.SetParams(t, f, g.params)
		}
		require.NoError(t, f.Available(target), g.fault)
		began := time.Now()
		errc := make(chan error, 1)
		pctx, proofs := faults.WithProofs(ctx, nil)
		go func() { errc <- f.Inject(pctx, target, 3*time.Second) }()
		if g.during != nil {
			time.Sleep(1500 * time.Millisecond)
			g.during(t, target)
		}
		require.NoError(t, <-errc, g.fault)
		// The fault's own proof, as a run records it, says it landed.
		ps := proofs.List()
		require.Len(t, ps, 1, "%s records one proof", g.fault)
		require.Equal(t, record.Landed, ps[0].Landed, "%s: %s", g.fault, ps[0].Observed)
		g.after(t, target)
		hctx, hcancel := context.WithTimeout(ctx, 90*time.Second)
		require.NoError(t, c.WaitHealthy(hctx), "healthy after %s", g.fault)
		hcancel()
		t.Logf("%s on %s: landed and undone, healthy again %s after it began", g.fault, target.Name(), time.Since(began).Round(time.Millisecond))
	}
}

// start starts a small cluster of system on placement, each member under
// a memory limit (for set-memory-limit to change).
func start(t *testing.T, ctx context.Context, system, placement string) (lab.Cluster, *lab.Env) {
	c, env := systemtest.StartSystem(t, ctx, system, placement, nil)
	for _, m := range c.Members() {
		sm, ok := m.(member)
		require.True(t, ok, "%s is a server of its placement", m.Name())
		require.NoError(t, sm.SetMemory(700))
	}
	return c, env
}

func statusIs(want string) func(*testing.T, member) {
	return func(t *testing.T, m member) {
		t.Helper()
		got, err := m.State(context.Background())
		require.NoError(t, err)
		require.Equal(t, want, got, "%s read back from the kernel or the engine", m.Name())
	}
}

func cpuIs(want float64) func(*testing.T, member) {
	return func(t *testing.T, m member) {
		t.Helper()
		got, err := m.CPU()
		require.NoError(t, err)
		require.InDelta(t, want, got, 0.01, "%s's CPU limit read back", m.Name())
	}
}

func memoryIs(want int) func(*testing.T, member) {
	return func(t *testing.T, m member) {
		t.Helper()
		got, err := m.Memory()
		require.NoError(t, err)
		require.Equal(t, want, got, "%s's memory limit read back (MiB)", m.Name())
	}
}

// dialFails: the member's client port, reached from this machine, does
// not answer (the connection is refused, reset, or nothing comes back:
// cut off), or answers a request (connected). The harness may reach it
// through a relay of its placement, which accepts before it reaches the
// server: so a request is sent, and its answer read.
func dialFails(cut bool) func(*testing.T, member) {
	return func(t *testing.T, m member) {
		t.Helper()
		require.Equal(t, cut, m.Disconnected(), "%s's cut read back", m.Name())
		// The port every server listens on whatever its role (a
		// ZooKeeper follower has no quorum port open).
		port := "client"
		if _, ok := m.Layout().Ports[port]; !ok {
			port = "http"
		}
		got := answer(m.Addr(port, lab.FromHost), m.Layout().Role)
		require.Equal(t, !cut, got != "", "%s answers on its %s port (cut off: %v): %q", m.Name(), port, cut, got)
	}
}

// answer is what a server answers a request on addr ("": nothing):
// ZooKeeper's ruok, an HTTP GET otherwise (etcd's and Consul's ports
// speak HTTP).
func answer(addr, role string) string {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	req := "GET /health HTTP/1.0\r\n\r\n"
	if strings.Contains(role, "zookeeper") {
		req = "ruok"
	}
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte(req)); err != nil {
		return ""
	}
	b := make([]byte, 64)
	n, _ := conn.Read(b)
	return string(b[:n])
}
