package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Start starts the datacenter on the variant's site and returns once it
// is healthy; with agent_restart, a supervisor restarts agents that die.
func (s *System) Start(ctx context.Context, env *lab.Env, topo lab.Settings) (lab.Cluster, error) {
	t := topo.(*Topology)
	s.mu.Lock()
	bin := s.binary
	s.mu.Unlock()
	if bin == "" && t.AgentMemoryMB > 0 {
		// Agents under a memory limit run this machine's build in their
		// containers (lab.Program.HostBinary): from the cache the images
		// are made from.
		var err error
		if bin, err = images.ConsulBinary(ctx, images.Options{}); err != nil {
			return nil, fmt.Errorf("start consul: find the agents' binary: %w", err)
		}
	}
	ss, err := servers.StartAll(ctx, env.Site, t.specs(), t.render(bin))
	if err != nil {
		return nil, fmt.Errorf("start consul: %w", err)
	}
	c := &cluster{env: env, clients: map[string]*api.Client{}}
	for _, sv := range ss {
		c.members = append(c.members, &member{Member: &servers.Member{Server: sv, Env: env}, server: isServer(sv.Layout()), c: c})
	}
	for _, m := range c.members {
		m.RoleOf = func(ctx context.Context, _ lab.Server) (string, error) { return m.role(ctx) }
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start consul: %w", err)
	}
	if t.AgentRestart.On() {
		var pods []*pod
		for _, m := range c.members {
			if !m.server {
				pods = append(pods, &pod{m: m})
			}
		}
		c.sup = superviseAgents(env, t.AgentRestart, pods)
	}
	return c, nil
}

// cluster is a running datacenter as a lab.Cluster.
type cluster struct {
	env     *lab.Env
	members []*member

	mu      sync.Mutex
	clients map[string]*api.Client
	// sup restarts dead agents (nil: agent_restart is off).
	sup *supervisor
}

// DataDirs: the nodes' data on this machine (a container's goes with it).
func (c *cluster) DataDirs() []string { return servers.DataDirs(c.members) }

// client is a (cached) API client of a node.
func (c *cluster) client(m *member) (*api.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr := m.Addr("http", lab.FromHost)
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := apiClient(addr)
	if err == nil {
		c.clients[addr] = cl
	}
	return cl, err
}

func (c *cluster) Members() []lab.Member { return servers.Members(c.members) }

// Endpoints are the client agents' HTTP APIs (a program talks to its local
// agent), or the servers' when there is no agent.
func (c *cluster) Endpoints(v lab.View) []string {
	var agents, servers []string
	for _, m := range c.members {
		addr := m.Addr("http", v)
		if m.server {
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

// ClientAddrs are the agents' (or, without agents, the servers') HTTP
// addresses from the host.
func (c *cluster) ClientAddrs() []string { return c.Endpoints(lab.FromHost) }

// ClientEnvVia: instance i's agent, through via.
func (c *cluster) ClientEnvVia(i int, via func(string) string) map[string]string {
	eps := c.ClientAddrs()
	if len(eps) == 0 {
		return nil
	}
	return map[string]string{"CHAOSLAB_CONSUL_HTTP_ADDR": via(eps[i%len(eps)])}
}

// leaderAddr asks a node which server leads ("" when none does).
func (c *cluster) leaderAddr(ctx context.Context, m *member) (string, error) {
	cl, err := c.client(m)
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
		if !m.server || !m.Running() || m.Paused() {
			continue
		}
		a, err := c.leaderAddr(ctx, m)
		if err != nil || a == "" {
			return nil, fmt.Errorf("%s names no leader: %v", m.Name(), err)
		}
		if addr != "" && a != addr {
			return nil, fmt.Errorf("servers disagree on the leader (%s, %s)", addr, a)
		}
		addr = a
	}
	for _, m := range c.members {
		if m.server && m.raftAddr() == addr {
			return m, nil
		}
	}
	return nil, errors.New("no server leads")
}

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
	if !m.Running() || m.Paused() {
		return s
	}
	cl, err := c.client(m)
	if err != nil {
		return s
	}
	leader, err := c.leaderAddr(ctx, m)
	if err != nil {
		return s
	}
	info, err := cl.Agent().Metrics()
	if err != nil {
		return s
	}
	s.OK, s.Role = true, m.roleFor(leader)
	s.Values = map[string]float64{}
	for _, g := range info.Gauges {
		switch g.Name {
		case "consul.runtime.alloc_bytes":
			s.Values["server.alloc_mb"] = float64(g.Value) / (1 << 20)
		case "consul.runtime.num_goroutines":
			s.Values["server.goroutines"] = float64(g.Value)
		}
	}
	s.Values[lab.SeriesServerRequests] = m.reqs.add(*info)
	return s
}

func (*cluster) Limit(context.Context) error { return nil }

func (c *cluster) Version(context.Context) string {
	for _, m := range c.members {
		cl, err := c.client(m)
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

// Close stops the supervisor, then every node (the site removes what is
// left).
func (c *cluster) Close() error {
	if c.sup != nil {
		c.sup.stop() // before the nodes stop: their ends are not deaths
	}
	return servers.Close(c.members)
}

// member is one node: the generic faults through its placement.
type member struct {
	*servers.Member
	server bool
	c      *cluster
	reqs   requestCount
}

// role asks the node which server leads.
func (m *member) role(ctx context.Context) (string, error) {
	if !m.server {
		return lab.RoleAgent, nil
	}
	leader, err := m.c.leaderAddr(ctx, m)
	if err != nil {
		return "", err
	}
	return m.roleFor(leader), nil
}

// roleFor is the node's role when leader is the raft address that leads.
func (m *member) roleFor(leader string) string {
	switch {
	case !m.server:
		return lab.RoleAgent
	case leader != "" && leader == m.raftAddr():
		return lab.RoleLeader
	}
	return lab.RoleFollower
}

// raftAddr is the address /v1/status/leader names for a server: the
// address it advertises (its layout's, when that is an address, else its
// own on the site's network: a container's) and raft port.
func (m *member) raftAddr() string {
	host := m.Layout().Host
	if p := m.Proc(); p != nil && p.Host() != "" && net.ParseIP(host) == nil {
		host = p.Host()
	}
	return net.JoinHostPort(host, strconv.Itoa(m.Layout().Ports["server"]))
}

// MemoryLimit is a client agent's pod memory limit in bytes (0: none, a
// server; -1 for a probe).
func (m *member) MemoryLimit() int64 {
	if m.Server == nil {
		return -1
	}
	if m.server {
		return 0
	}
	return m.Member.MemoryLimit()
}

// SetMemoryLimit changes a client agent's pod memory limit while it runs.
func (m *member) SetMemoryLimit(bytes int64) error {
	if m.server {
		return fmt.Errorf("%s is a server: it has no pod memory limit", m.Name())
	}
	return m.Member.SetMemoryLimit(bytes)
}

// DNSAddr is a client agent's DNS address as the harness reaches it (UDP
// and TCP); a probe (no process yet) has "" and no error.
func (m *member) DNSAddr() (string, error) {
	if m.Server == nil {
		return "", nil
	}
	if m.server {
		return "", fmt.Errorf("%s is a server, not a client agent", m.Name())
	}
	return m.Addr("dns", lab.FromHost), nil
}

// Agents are c's client agents (none when c is not a Consul cluster).
func Agents(c lab.Cluster) []lab.Member {
	cc, ok := c.(*cluster)
	if !ok {
		return nil
	}
	var out []lab.Member
	for _, m := range cc.members {
		if !m.server {
			out = append(out, m)
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
		if m.server && m.Running() && !m.Paused() {
			return c.client(m)
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
		if m.server {
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
