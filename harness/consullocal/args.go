package consullocal

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Address is the one loopback address every node binds: its serf, server
// (raft and RPC), HTTP and DNS listeners, with ports of its own per node.
const Address = "127.0.0.1"

// DefaultRetryInterval is -retry-interval (Consul's default is 30 s): the
// nodes start at the same time, so a first join attempt that finds a
// server not yet listening is repeated soon.
const DefaultRetryInterval = 200 * time.Millisecond

// DefaultRaftMultiplier is the servers' performance.raft_multiplier when
// Options.RaftMultiplier is 0: 1, Consul's advice for production (its
// default, 5, makes every raft timeout, hence a first election and every
// election after a leader fails, 5 times slower).
const DefaultRaftMultiplier = 1

// Limits of Options.
const (
	MaxServers = 5
	MaxAgents  = 20
)

// Roles of a Node.
const (
	RoleServer = "server"
	RoleAgent  = "agent"
)

// ports are the TCP (and, for serf and DNS, UDP) ports of one node on
// Address. A client agent has no server or WAN port (0).
type ports struct {
	Server  int // -server-port: raft and RPC (servers only)
	SerfLAN int // -serf-lan-port, TCP and UDP
	SerfWAN int // -serf-wan-port, TCP and UDP (servers only)
	HTTP    int // -http-port
	DNS     int // -dns-port, TCP and UDP
}

// count is how many ports a server or an agent needs.
func portCount(server bool) int {
	if server {
		return 5
	}
	return 3
}

// assign fills the ports in the order of portCount from ps.
func assign(server bool, ps []int) ports {
	if server {
		return ports{Server: ps[0], SerfLAN: ps[1], SerfWAN: ps[2], HTTP: ps[3], DNS: ps[4]}
	}
	return ports{SerfLAN: ps[0], HTTP: ps[1], DNS: ps[2]}
}

// nodeSpec is everything a node's command line is made of.
type nodeSpec struct {
	Name            string // -node: server1, agent1
	Server          bool
	BootstrapExpect int // servers: the number of servers
	Addr            string
	Ports           ports
	DataDir         string
	Join            []string // serf LAN addresses (host:port) to -retry-join
	RetryInterval   time.Duration
	RaftMultiplier  int // servers
	ExtraArgs       []string
}

// args renders the command line after the binary. Every listener is on
// s.Addr (-bind, -client; Consul advertises the bind address), gRPC (and,
// on servers, gRPC-TLS, which Consul 1.14 opens on 8503 by default even
// without TLS) is off, and ExtraArgs come last, so they override.
func (s nodeSpec) args() []string {
	a := []string{"agent"}
	if s.Server {
		a = append(a, "-server", "-bootstrap-expect="+strconv.Itoa(s.BootstrapExpect))
	}
	a = append(a,
		"-node="+s.Name,
		"-data-dir="+s.DataDir,
		"-bind="+s.Addr,
		"-client="+s.Addr,
		"-serf-lan-port="+strconv.Itoa(s.Ports.SerfLAN),
		"-http-port="+strconv.Itoa(s.Ports.HTTP),
		"-dns-port="+strconv.Itoa(s.Ports.DNS),
		"-grpc-port=-1",
	)
	if s.Server {
		a = append(a,
			"-server-port="+strconv.Itoa(s.Ports.Server),
			"-serf-wan-port="+strconv.Itoa(s.Ports.SerfWAN),
			"-grpc-tls-port=-1",
			fmt.Sprintf("-hcl=performance { raft_multiplier = %d }", s.RaftMultiplier),
		)
	}
	for _, j := range s.Join {
		a = append(a, "-retry-join="+j)
	}
	if len(s.Join) > 0 {
		a = append(a, "-retry-interval="+s.RetryInterval.String())
	}
	return append(a, s.ExtraArgs...)
}

// plan returns the specs of a cluster of servers servers and agents agents
// on addr, given their ports (servers first, each taking portCount).
// Servers expect all servers and join the other servers; agents join
// every server.
func plan(o Options, addr, dir string, ps []int) ([]nodeSpec, error) {
	need := o.Servers*portCount(true) + o.Agents*portCount(false)
	if len(ps) != need {
		return nil, fmt.Errorf("%d ports for %d servers and %d agents, want %d", len(ps), o.Servers, o.Agents, need)
	}
	var specs []nodeSpec
	var serfs []string
	for i := range o.Servers {
		p := assign(true, ps[:portCount(true)])
		ps = ps[portCount(true):]
		specs = append(specs, nodeSpec{
			Name: ServerName(i + 1), Server: true, BootstrapExpect: o.Servers,
			Addr: addr, Ports: p, RaftMultiplier: o.RaftMultiplier,
		})
		serfs = append(serfs, net.JoinHostPort(addr, strconv.Itoa(p.SerfLAN)))
	}
	for i := range o.Agents {
		p := assign(false, ps[:portCount(false)])
		ps = ps[portCount(false):]
		specs = append(specs, nodeSpec{Name: AgentName(i + 1), Addr: addr, Ports: p})
	}
	for i := range specs {
		s := &specs[i]
		s.DataDir = filepath.Join(dir, s.Name)
		s.RetryInterval = DefaultRetryInterval
		s.ExtraArgs = append([]string(nil), o.ExtraArgs...)
		for j, sa := range serfs {
			if !(s.Server && j == i) {
				s.Join = append(s.Join, sa)
			}
		}
	}
	return specs, nil
}

// ServerName is the -node name of server id (1-based): "server1".
func ServerName(id int) string { return RoleServer + strconv.Itoa(id) }

// AgentName is the -node name of client agent id (1-based): "agent1".
func AgentName(id int) string { return RoleAgent + strconv.Itoa(id) }

// check validates o after defaults.
func (o Options) check() error {
	switch {
	case o.Servers < 1 || o.Servers > MaxServers:
		return fmt.Errorf("%d servers: want 1 to %d", o.Servers, MaxServers)
	case o.Agents < 0 || o.Agents > MaxAgents:
		return fmt.Errorf("%d agents: want 0 to %d", o.Agents, MaxAgents)
	case o.Binary == "":
		return fmt.Errorf("no consul binary (Options.Binary; see images.ConsulBinary)")
	case o.RaftMultiplier < 1 || o.RaftMultiplier > 10:
		return fmt.Errorf("RaftMultiplier=%d: want 1 to 10 (0: %d)", o.RaftMultiplier, DefaultRaftMultiplier)
	}
	for _, a := range o.ExtraArgs {
		if strings.HasPrefix(a, "-dev") {
			return fmt.Errorf("ExtraArgs: %s: a dev agent is a cluster of its own", a)
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Servers == 0 {
		o.Servers = 1
	}
	if o.RaftMultiplier == 0 {
		o.RaftMultiplier = DefaultRaftMultiplier
	}
	return o
}
