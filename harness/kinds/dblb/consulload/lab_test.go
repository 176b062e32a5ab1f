package consulload

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
	"github.com/chaoslab/chaoslab/harness/systems/consul"
	"github.com/chaoslab/chaoslab/harness/systemtest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func consulBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (runs consul processes): not with -short")
	}
	binOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		binPath, binErr = images.ConsulBinary(ctx, images.Options{})
	})
	if binErr != nil {
		t.Skipf("no consul binary (set CHAOSLAB_CONSUL, or run `chaoslab images build --only consul`): %v", binErr)
	}
	return binPath
}

// testLab is 3 servers and one client agent in a memory cgroup.
type testLab struct {
	agent agent
	srv   *api.Client // a server's HTTP API
}

// agent is the client agent: a server of the local placement.
type agent interface {
	Running() bool
	Proc() lab.Proc
	Restart(ctx context.Context) error
	Addr(port string, v lab.View) string
}

// startLab starts the cluster with the agent limited to limit bytes and,
// if gomemlimit is set, that GOMEMLIMIT in its environment.
func startLab(t *testing.T, ctx context.Context, limit int64, gomemlimit string) *testLab {
	t.Helper()
	consulBinary(t)
	if mode, why := limits.Detect(); mode == limits.ModeNone {
		t.Skipf("no cgroups here: %s", why)
	}
	c, _ := systemtest.StartSystem(t, ctx, "consul", "local", func(s lab.Settings) {
		topo := s.(*consul.Topology)
		topo.Servers, topo.Agents, topo.AgentMemoryMB = 3, 1, int(limit>>20)
		if gomemlimit != "" {
			topo.AgentEnv = map[string]string{"GOMEMLIMIT": gomemlimit}
		}
	})
	srv, err := consul.ServerAPI(c)
	if err != nil {
		t.Fatal(err)
	}
	return &testLab{agent: consul.Agents(c)[0].(agent), srv: srv}
}

// proc is the agent's latest process.
func (l *testLab) proc() lab.Proc { return l.agent.Proc() }

// dnsAddr and httpAddr are the agent's, as this machine reaches them.
func (l *testLab) dnsAddr() string  { return l.agent.Addr("dns", lab.FromHost) }
func (l *testLab) httpAddr() string { return l.agent.Addr("http", lab.FromHost) }
