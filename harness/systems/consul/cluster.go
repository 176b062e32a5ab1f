package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/dockerconsul"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// node is what both placements' nodes give.
type node interface {
	lab.Target
	Running() bool
	Paused() bool
	IsServer() bool
	// HTTPAddr is the node's HTTP API as the harness reaches it.
	HTTPAddr() string
	// siteHTTP is the same as the site's programs reach it.
	siteHTTP() string
	// raftAddr is the address /v1/status/leader names for a server.
	raftAddr() string
}

// cluster is a running datacenter as a lab.Cluster.
type cluster struct {
	env     *lab.Env
	members []*member
	wait    func(context.Context) error
	close   func() error

	mu      sync.Mutex
	clients map[string]*api.Client
	// data are the nodes' data directories on this machine.
	data []string
	// sup restarts dead agents (nil: agent_restart is off).
	sup *supervisor
}

// DataDirs: the local nodes' data (a container's goes with it).
func (c *cluster) DataDirs() []string { return c.data }

func newCluster(env *lab.Env, nodes []node, wait func(context.Context) error, closeFn func() error) *cluster {
	c := &cluster{env: env, wait: wait, close: closeFn, clients: map[string]*api.Client{}}
	for _, n := range nodes {
		c.members = append(c.members, &member{node: n, c: c})
	}
	return c
}

// client is a (cached) API client of a node.
func (c *cluster) client(n node) (*api.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := n.HTTPAddr()
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := apiClient(addr)
	if err == nil {
		c.clients[addr] = cl
	}
	return cl, err
}

func (c *cluster) Members() []lab.Member {
	out := make([]lab.Member, len(c.members))
	for i, m := range c.members {
		out[i] = m
	}
	return out
}

// Endpoints are the client agents' HTTP APIs (a program talks to its local
// agent), or the servers' when there is no agent.
func (c *cluster) Endpoints(v lab.View) []string {
	var agents, servers []string
	for _, m := range c.members {
		addr := m.node.HTTPAddr()
		if v == lab.FromSite {
			addr = m.node.siteHTTP()
		}
		if m.node.IsServer() {
			servers = append(servers, addr)
		} else {
			agents = append(agents, addr)
		}
	}
	if len(agents) > 0 {
		return agents
	}
	return servers
}

// ClientEnv: the HTTP API of one agent per instance, round robin (a pod
// talks to the agent of its node).
func (c *cluster) ClientEnv(v lab.View, i int) map[string]string {
	eps := c.Endpoints(v)
	if len(eps) == 0 {
		return nil
	}
	return map[string]string{"CHAOSLAB_CONSUL_HTTP_ADDR": eps[i%len(eps)]}
}

// leaderAddr asks a node which server leads ("" when none does).
func (c *cluster) leaderAddr(ctx context.Context, n node) (string, error) {
	cl, err := c.client(n)
	if err != nil {
		return "", err
	}
	qctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	return cl.Status().LeaderWithQueryOptions((&api.QueryOptions{}).WithContext(qctx))
}

// Leader is the server every running server names, twice in a row.
func (c *cluster) Leader(ctx context.Context) (lab.Member, error) {
	var last *member
	for {
		l, err := c.leaderOnce(ctx)
		if err == nil && l == last {
			return l, nil
		}
		last = l
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("find consul leader: %w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) leaderOnce(ctx context.Context) (*member, error) {
	var addr string
	for _, m := range c.members {
		if !m.node.IsServer() || !m.node.Running() || m.node.Paused() {
			continue
		}
		a, err := c.leaderAddr(ctx, m.node)
		if err != nil || a == "" {
			return nil, fmt.Errorf("%s names no leader: %v", m.Name(), err)
		}
		if addr != "" && a != addr {
			return nil, fmt.Errorf("servers disagree on the leader (%s, %s)", addr, a)
		}
		addr = a
	}
	for _, m := range c.members {
		if m.node.IsServer() && m.node.raftAddr() == addr {
			return m, nil
		}
	}
	return nil, errors.New("no server leads")
}

func (c *cluster) WaitHealthy(ctx context.Context) error { return c.wait(ctx) }

// Sample reads every node's own metrics and its view of the leader.
func (c *cluster) Sample(ctx context.Context) []lab.MemberSample {
	out := make([]lab.MemberSample, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { out[i] = c.sample(ctx, m) })
	}
	wg.Wait()
	if c.sup != nil {
		out = append(out, c.sup.samples(c.env.Now())...)
	}
	return out
}

func (c *cluster) sample(ctx context.Context, m *member) lab.MemberSample {
	s := lab.MemberSample{T: c.env.Now(), Member: m.Name()}
	if !m.node.Running() || m.node.Paused() {
		return s
	}
	cl, err := c.client(m.node)
	if err != nil {
		return s
	}
	leader, err := c.leaderAddr(ctx, m.node)
	if err != nil {
		return s
	}
	info, err := cl.Agent().Metrics()
	if err != nil {
		return s
	}
	s.OK, s.Role = true, roleOf(m.node, leader)
	s.Values = map[string]float64{}
	for _, g := range info.Gauges {
		switch g.Name {
		case "consul.runtime.alloc_bytes":
			s.Values["server.alloc_mb"] = float64(g.Value) / (1 << 20)
		case "consul.runtime.num_goroutines":
			s.Values["server.goroutines"] = float64(g.Value)
		}
	}
	return s
}

func roleOf(n node, leader string) string {
	switch {
	case !n.IsServer():
		return lab.RoleAgent
	case leader != "" && leader == n.raftAddr():
		return lab.RoleLeader
	}
	return lab.RoleFollower
}

func (*cluster) Limit(context.Context) error { return nil }

func (c *cluster) Version(context.Context) string {
	for _, m := range c.members {
		cl, err := c.client(m.node)
		if err != nil {
			continue
		}
		if self, err := cl.Agent().Self(); err == nil {
			if cfg, ok := self["Config"]; ok {
				if v, ok := cfg["Version"].(string); ok {
					return v
				}
			}
		}
	}
	return ""
}

func (c *cluster) Close() error { return c.close() }

// member is one node as a fault target.
type member struct {
	node
	c *cluster
}

// Role asks the node which server leads.
func (m *member) Role(ctx context.Context) (string, error) {
	if !m.node.IsServer() {
		return lab.RoleAgent, nil
	}
	leader, err := m.c.leaderAddr(ctx, m.node)
	if err != nil {
		return "", err
	}
	return roleOf(m.node, leader), nil
}

// MemoryLimit is a client agent's pod memory limit in bytes (0: none; -1
// for a probe): its cgroup's or its container's (faults.MemoryLimiter).
func (m *member) MemoryLimit() int64 {
	l, ok := m.node.(faults.MemoryLimiter)
	switch {
	case !ok:
		return 0
	case m.probe():
		return -1
	case m.node.IsServer():
		return 0
	}
	return l.MemoryLimit()
}

// probe: a member with no process behind it (plug-in listings).
func (m *member) probe() bool {
	switch n := m.node.(type) {
	case *localNode:
		return n.Node == nil
	case *dockerNode:
		return n.Node == nil || n.Node.Name() == ""
	}
	return false
}

// SetMemoryLimit changes a client agent's pod memory limit while it runs.
func (m *member) SetMemoryLimit(bytes int64) error {
	l, ok := m.node.(faults.MemoryLimiter)
	if !ok || m.node.IsServer() {
		return fmt.Errorf("%s has no memory limit the lab can change", m.Name())
	}
	return l.SetMemoryLimit(bytes)
}

// DNSAddr is a local client agent's DNS address as the harness reaches
// it (UDP and TCP); a container agent's DNS is not published to the host.
// A probe (no process yet) has "" and no error.
func (m *member) DNSAddr() (string, error) {
	switch n := m.node.(type) {
	case *localNode:
		if n.Node == nil {
			return "", nil
		}
		if n.IsServer() {
			return "", fmt.Errorf("%s is a server, not a client agent", n.Name())
		}
		return n.Node.DNSAddr(), nil
	case *dockerNode:
		if n.Node == nil || !n.IP().IsValid() {
			return "", nil
		}
		if n.IsServer() {
			return "", fmt.Errorf("%s is a server, not a client agent", n.Name())
		}
		// The harness reaches the run network's addresses directly.
		return net.JoinHostPort(n.IP().String(), "8600"), nil
	}
	return "", errors.New("no DNS address for this consul node")
}

// AgentContainers are c's client agents' containers (none when c is not
// a Consul cluster on the docker placement).
func AgentContainers(c lab.Cluster) []*dockerconsul.Node {
	cc, ok := c.(*cluster)
	if !ok {
		return nil
	}
	var out []*dockerconsul.Node
	for _, m := range cc.members {
		if n, ok := m.node.(*dockerNode); ok && n.Node != nil && !n.IsServer() {
			out = append(out, n.Node)
		}
	}
	return out
}

// ServerAPI is a client of a server's HTTP API (catalog writes that must
// not go through a client agent that may be dead).
func (m *member) ServerAPI() (*api.Client, error) {
	if m.c == nil {
		return nil, errors.New("a probe has no cluster")
	}
	return m.c.serverAPI()
}

// serverAPI is a client of the first running server's HTTP API.
func (c *cluster) serverAPI() (*api.Client, error) {
	for _, m := range c.members {
		if m.node.IsServer() && m.node.Running() && !m.node.Paused() {
			return c.client(m.node)
		}
	}
	return nil, errors.New("no consul server running")
}

// ServerAPI is a client of a running server's HTTP API of c (a Consul
// cluster).
func ServerAPI(c lab.Cluster) (*api.Client, error) {
	cc, ok := c.(*cluster)
	if !ok {
		return nil, errors.New("not a consul cluster")
	}
	return cc.serverAPI()
}

// AgentDNSAddrs are the DNS addresses of c's client agents, in order, as
// the harness reaches them (local agents only).
func AgentDNSAddrs(c lab.Cluster) ([]string, error) {
	cc, ok := c.(*cluster)
	if !ok {
		return nil, errors.New("not a consul cluster")
	}
	var out []string
	for _, m := range cc.members {
		if m.node.IsServer() {
			continue
		}
		a, err := m.DNSAddr()
		if err != nil {
			return nil, fmt.Errorf("find agents' dns: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}
