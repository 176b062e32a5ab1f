package dockerconsul

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
)

func TestNames(t *testing.T) {
	require.Equal(t, "server2", ServerName(2))
	require.Equal(t, "agent3", AgentName(3))
	require.Equal(t, "run-7-consul-agent1", ContainerName("run-7", AgentName(1)))
	require.Equal(t, []string{"server1", "server2", "server3"}, ServerNames(3))
}

func TestNodeConfigArgs(t *testing.T) {
	o := Options{Servers: 3, RaftMultiplier: 1}
	require.Equal(t, []string{
		"agent", "-server", "-bootstrap-expect=3",
		"-node=server2", "-client=0.0.0.0", "-bind=0.0.0.0", "-data-dir=/consul/data",
		"-retry-join=server1", "-retry-join=server2", "-retry-join=server3", "-retry-interval=1s",
		"-hcl=performance { raft_multiplier = 1 }",
	}, o.nodeConfig(true, 2).Args())
	require.Equal(t, []string{
		"agent",
		"-node=agent1", "-client=0.0.0.0", "-bind=0.0.0.0", "-data-dir=/consul/data",
		"-retry-join=server1", "-retry-join=server2", "-retry-join=server3", "-retry-interval=1s",
	}, o.nodeConfig(false, 1).Args(), "agents have no raft")

	// One server: it expects itself and joins itself (harmless).
	one := Options{Servers: 1, LogLevel: "warn", ExtraArgs: []string{"-disable-update-check"}}
	require.Equal(t, []string{
		"agent", "-server", "-bootstrap-expect=1",
		"-node=server1", "-client=0.0.0.0", "-bind=0.0.0.0", "-data-dir=/consul/data",
		"-retry-join=server1", "-retry-interval=1s", "-log-level=warn", "-disable-update-check",
	}, one.nodeConfig(true, 1).Args())

	// Run's default: a server that elects itself.
	def := NodeConfig{Name: ServerName(1), Server: true, BootstrapExpect: 1}
	require.Equal(t, []string{
		"agent", "-server", "-bootstrap-expect=1",
		"-node=server1", "-client=0.0.0.0", "-bind=0.0.0.0", "-data-dir=/consul/data",
	}, def.Args())
	require.True(t, def.standalone())
	require.False(t, one.nodeConfig(true, 1).standalone(), "it waits for its join")

	require.NoError(t, NodeConfig{}.Check())
	for _, bad := range []NodeConfig{
		{BootstrapExpect: 1}, {Server: true, BootstrapExpect: -1}, {RaftMultiplier: 11}, {Name: "a b"},
	} {
		require.Error(t, bad.Check(), "%+v", bad)
	}
}

func TestOptionsDefaults(t *testing.T) {
	ctx := context.Background()
	o, err := Options{Image: "x"}.withDefaults(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, o.Servers)
	require.Equal(t, 0, o.Agents)
	require.Equal(t, DefaultStartupTimeout, o.StartupTimeout)
	require.Regexp(t, `^chaoslab-[0-9a-f]{8}$`, o.RunID)
	require.NotNil(t, o.Logger)
	for _, bad := range []Options{
		{Image: "x", Servers: 8}, {Image: "x", Servers: -1}, {Image: "x", Agents: -1}, {Image: "x", Agents: 51},
		{Image: "x", RunID: "bad id"}, {Image: "x", RaftMultiplier: -1}, {Image: "x", AgentMemoryLimit: -1},
	} {
		_, err := bad.withDefaults(ctx)
		require.Error(t, err, "%+v", bad)
	}
}

func TestImageCandidates(t *testing.T) {
	t.Setenv(ImageEnv, "")
	require.Equal(t, []string{"chaoslab/consul:1.14.11", "hashicorp/consul:1.14.11"}, ImageCandidates())
	t.Setenv(ImageEnv, "mine:1")
	require.Equal(t, []string{"mine:1", DefaultImage, OfficialImage}, ImageCandidates())
}

func TestOptionsAreCustomizers(t *testing.T) {
	s := options{cfg: NodeConfig{}.withDefaults()}
	for _, o := range []Option{
		WithNodeConfig(NodeConfig{Name: "agent1"}), WithRaftMultiplier(2), WithExtraArgs("-a"),
		WithStartupTimeout(time.Second), WithPull(),
	} {
		require.NoError(t, o(&s))
		require.NoError(t, o.Customize(nil))
	}
	require.Equal(t, "agent1", s.cfg.Name)
	require.Equal(t, 2, s.cfg.RaftMultiplier)
	require.Equal(t, []string{"-a"}, s.cfg.ExtraArgs)
	require.Equal(t, time.Second, s.startupTimeout)
	require.True(t, s.pull)
	require.Error(t, WithRaftMultiplier(20)(&s))
}

func TestPublishPortsOnLoopbackOnly(t *testing.T) {
	req := testcontainers.GenericContainerRequest{}
	require.NoError(t, docker.PublishPorts(HTTPPort)(&req))
	require.Equal(t, []string{HTTPPort}, req.ExposedPorts)
	require.NotNil(t, req.HostConfigModifier)
}

// testCluster is a cluster of 1 server and 2 agents with addresses, for
// the health rules.
func testCluster() *Cluster {
	c := &Cluster{}
	c.servers = []*Node{{id: 1, name: "server1", server: true, cl: c, ip: netip.MustParseAddr("10.0.0.2")}}
	c.agents = []*Node{{id: 1, name: "agent1", cl: c, ip: netip.MustParseAddr("10.0.0.3")}, {id: 2, name: "agent2", cl: c, ip: netip.MustParseAddr("10.0.0.4")}}
	return c
}

func members(status map[string]int) []*api.AgentMember {
	var out []*api.AgentMember
	for _, n := range []string{"server1", "agent1", "agent2"} {
		if st, ok := status[n]; ok {
			out = append(out, &api.AgentMember{Name: n, Status: st})
		}
	}
	return out
}

func TestHealthRules(t *testing.T) {
	c := testCluster()
	n := c.Nodes()
	all := map[string]int{"server1": 1, "agent1": 1, "agent2": 1}
	ok := func(i int) status {
		return status{n: n[i], running: true, leader: "10.0.0.2:8300", members: members(all)}
	}
	l, bad, prob := health([]status{ok(0), ok(1), ok(2)})
	require.Empty(t, prob)
	require.Empty(t, bad)
	require.Equal(t, n[0], l)

	// An agent that sees another as failed.
	s1 := ok(1)
	s1.members = members(map[string]int{"server1": 1, "agent1": 1, "agent2": MemberFailed})
	_, bad, prob = health([]status{ok(0), s1, ok(2)})
	require.Equal(t, []*Node{n[1]}, bad)
	require.Contains(t, prob, "agent1 sees agent2 failed")

	// An agent the server has not heard of yet.
	s0 := ok(0)
	s0.members = members(map[string]int{"server1": 1, "agent1": 1})
	_, bad, prob = health([]status{s0, ok(1), ok(2)})
	require.Equal(t, []*Node{n[0]}, bad)
	require.Contains(t, prob, "server1 sees agent2 unknown")

	// A stopped (OOM-killed) agent does not count; the others see it failed.
	gone := status{n: n[2]}
	failed := map[string]int{"server1": 1, "agent1": 1, "agent2": MemberFailed}
	a, b := ok(0), ok(1)
	a.members, b.members = members(failed), members(failed)
	l, _, prob = health([]status{a, b, gone})
	require.Empty(t, prob)
	require.Equal(t, n[0], l)

	// A paused agent, and one that does not answer.
	p := status{n: n[2], running: true, paused: true}
	_, bad, prob = health([]status{ok(0), ok(1), p})
	require.Contains(t, bad, n[2])
	require.Contains(t, prob, "agent2=paused")
	d := status{n: n[1], running: true, err: errors.New("context deadline exceeded")}
	_, bad, _ = health([]status{ok(0), d, ok(2)})
	require.Equal(t, []*Node{n[1]}, bad)

	// No leader, and an agent that names another leader.
	nl := ok(0)
	nl.leader = ""
	_, _, prob = health([]status{nl, ok(1), ok(2)})
	require.Contains(t, prob, "no leader")
	other := ok(2)
	other.leader = "10.0.0.9:8300"
	_, bad, prob = health([]status{ok(0), ok(1), other})
	require.Equal(t, []*Node{n[2]}, bad)
	require.Contains(t, prob, `agent2 names leader "10.0.0.9:8300"`)

	// leaderOf: the leader must be a server that answers.
	ld, err := leaderOf([]status{ok(0), ok(1), p})
	require.NoError(t, err)
	require.Equal(t, n[0], ld)
	ps := status{n: n[0], running: true, paused: true}
	_, err = leaderOf([]status{ps, ok(1), ok(2)})
	require.ErrorContains(t, err, "no server answers")
	wrong := ok(0)
	wrong.leader = "10.0.0.9:8300"
	_, err = leaderOf([]status{wrong, ok(1), ok(2)})
	require.ErrorContains(t, err, "is none of the servers")
	_, _, prob = health([]status{{n: n[0]}, {n: n[1]}, {n: n[2]}})
	require.Equal(t, "no node running", prob)
}

func TestLeaderOfThreeServers(t *testing.T) {
	c := &Cluster{}
	for i := 1; i <= 3; i++ {
		c.servers = append(c.servers, &Node{id: i, name: ServerName(i), server: true, cl: c, ip: netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)})})
	}
	s := func(i int, leader string) status {
		return status{n: c.servers[i], running: true, leader: leader}
	}
	// The leader server1 is paused: the others still name it for a while.
	p := status{n: c.servers[0], running: true, paused: true}
	_, err := leaderOf([]status{p, s(1, "10.0.0.2:8300"), s(2, "10.0.0.2:8300")})
	require.ErrorContains(t, err, "leader server1 (10.0.0.2:8300) does not answer")
	// Then they elect server3.
	l, err := leaderOf([]status{p, s(1, "10.0.0.4:8300"), s(2, "10.0.0.4:8300")})
	require.NoError(t, err)
	require.Equal(t, c.servers[2], l)
	_, err = leaderOf([]status{p, s(1, "10.0.0.3:8300"), s(2, "10.0.0.4:8300")})
	require.ErrorContains(t, err, "different leaders")
}

func TestJoined(t *testing.T) {
	srv := func(name string, st int) *api.AgentMember {
		return &api.AgentMember{Name: name, Status: st, Tags: map[string]string{"role": "consul"}}
	}
	agent := func(name string, st int) *api.AgentMember {
		return &api.AgentMember{Name: name, Status: st, Tags: map[string]string{"role": "node"}}
	}
	require.NoError(t, joined("agent1", false, []*api.AgentMember{agent("agent1", 1), srv("server1", 1)}))
	require.ErrorContains(t, joined("agent1", false, []*api.AgentMember{agent("agent1", 1)}), "no other server")
	require.ErrorContains(t, joined("agent1", false, []*api.AgentMember{agent("agent1", 1), srv("server1", MemberFailed)}), "no other server")
	require.ErrorContains(t, joined("agent1", false, []*api.AgentMember{srv("server1", 1)}), "not alive in its own member list")
	require.NoError(t, joined("server1", true, []*api.AgentMember{srv("server1", 1)}))
	require.Error(t, joined("server1", false, []*api.AgentMember{srv("server1", 1)}))
}

// localTarget stands for a local-process node: a Target without the
// container capabilities.
type localTarget struct{}

func (localTarget) Name() string                  { return "agent1" }
func (localTarget) Pause() error                  { return nil }
func (localTarget) Resume() error                 { return nil }
func (localTarget) Kill() error                   { return nil }
func (localTarget) Restart(context.Context) error { return nil }

func TestContainerFaultsAvailable(t *testing.T) {
	n := &Node{id: 1, name: "agent1"}
	for _, name := range []string{"replace", "disconnect", "pause", "kill-restart"} {
		f, err := faults.New(name)
		require.NoError(t, err, name)
		require.NoError(t, f.Available(n), name)
	}
	require.NoError(t, (&faults.CPUThrottle{Cores: 0.5}).Available(n))
	require.Error(t, (&faults.Disconnect{}).Available(localTarget{}))
}

func TestLabelsOfNodes(t *testing.T) {
	l := docker.MergeLabels(docker.Labels("r"), map[string]string{docker.LabelComponent: Component, docker.LabelMember: AgentName(1)})
	require.Equal(t, map[string]string{
		"org.chaoslab.managed": "true", "org.chaoslab.run": "r", "org.chaoslab.owner": docker.Owner(),
		"org.chaoslab.component": "consul", "org.chaoslab.member": "agent1",
	}, l)
}
