package consul

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Ports of a node, as the official image uses them; a client agent has
// no server (raft and RPC) or WAN port.
var (
	serverPorts = []lab.Port{{Name: "server", Number: 8300}, {Name: "serf_lan", Number: 8301}, {Name: "serf_wan", Number: 8302},
		{Name: "http", Number: 8500}, {Name: "dns", Number: 8600}}
	agentPorts = []lab.Port{{Name: "serf_lan", Number: 8301}, {Name: "http", Number: 8500}, {Name: "dns", Number: 8600}}
)

// retryInterval is -retry-interval (Consul's default is 30 s): the nodes
// start together, so a first join that finds a server not yet listening
// is tried again soon.
const retryInterval = 200 * time.Millisecond

// Names of the nodes: server1..., agent1...
func serverName(id int) string { return "server" + strconv.Itoa(id) }
func agentName(id int) string  { return "agent" + strconv.Itoa(id) }

// specs are the servers' and the agents' specs, servers first.
func (t *Topology) specs() []lab.ServerSpec {
	var out []lab.ServerSpec
	for i := range t.Servers {
		out = append(out, lab.ServerSpec{Name: serverName(i + 1), Role: "consul-server", Ports: serverPorts})
	}
	for i := range t.Agents {
		out = append(out, lab.ServerSpec{Name: agentName(i + 1), Role: "consul-agent", Ports: agentPorts})
	}
	return out
}

// isServer says whether a layout is a server's (it has a raft port).
func isServer(l lab.ServerLayout) bool {
	_, ok := l.Ports["server"]
	return ok
}

// render is a node's program: `consul agent` with every listener on its
// bind address, gRPC off, and -retry-join to every other server; a
// client agent under its pod's memory limit and environment.
func (t *Topology) render(bin string) servers.Render {
	return func(l lab.ServerLayout, all []lab.ServerLayout) (lab.ServerProgram, error) {
		server := isServer(l)
		args := []string{"agent"}
		if server {
			args = append(args, "-server", "-bootstrap-expect="+strconv.Itoa(t.Servers))
		}
		args = append(args, "-node="+l.Name, "-data-dir="+l.DataDir, "-bind="+l.Bind, "-client="+l.Bind,
			"-serf-lan-port="+port(l, "serf_lan"), "-http-port="+port(l, "http"), "-dns-port="+port(l, "dns"), "-grpc-port=-1")
		if l.Bind == "0.0.0.0" && net.ParseIP(l.Host) != nil {
			// Bound to every address of a network with several (a node's):
			// it advertises the one its peers reach it at.
			args = append(args, "-advertise="+l.Host)
		}
		if server {
			args = append(args, "-server-port="+port(l, "server"), "-serf-wan-port="+port(l, "serf_wan"), "-grpc-tls-port=-1",
				fmt.Sprintf("-hcl=performance { raft_multiplier = %d }", t.RaftMultiplier))
		}
		joins := 0
		for _, o := range all {
			if isServer(o) && o.Name != l.Name {
				args = append(args, "-retry-join="+o.Addr("serf_lan"))
				joins++
			}
		}
		if joins > 0 {
			args = append(args, "-retry-interval="+retryInterval.String())
		}
		p := lab.ServerProgram{Command: append([]string{bin}, args...), Image: Name, ImageEntrypoint: []string{imageBinary}, ImageArgs: args,
			Ready: joined(server && t.Servers == 1), Up: joined(server && t.Servers == 1)}
		if !server {
			p.Limits.MemoryMB = t.AgentMemoryMB
			if t.AgentMemoryMB > 0 {
				// The limit holds the agent's own memory, on containers too.
				p.HostBinary, p.HostBinaryAt = bin, imageBinary
			}
			for k, v := range t.AgentEnv {
				p.Env = append(p.Env, k+"="+v)
			}
		}
		return p, nil
	}
}

func port(l lab.ServerLayout, name string) string { return strconv.Itoa(l.Ports[name]) }

// joined: the node lists itself alive and, unless it is the only server
// (alone), a server other than itself.
func joined(alone bool) func(ctx context.Context, s lab.Server) error {
	return func(ctx context.Context, s lab.Server) error {
		cl, err := apiClient(s.Addr("http", lab.FromHost))
		if err != nil {
			return err
		}
		ms, err := cl.Agent().Members(false)
		if err != nil {
			return fmt.Errorf("%s: members: %w", s.Name(), err)
		}
		self, server := false, alone
		for _, m := range ms {
			if m.Status != memberAlive {
				continue
			}
			if m.Name == s.Name() {
				self = true
			} else if m.Tags["role"] == "consul" {
				server = true
			}
		}
		switch {
		case !self:
			return fmt.Errorf("%s is not alive in its own member list", s.Name())
		case !server:
			return fmt.Errorf("%s sees no other server alive", s.Name())
		}
		return nil
	}
}

// Serf member statuses of /v1/agent/members (serf.MemberStatus).
const (
	memberAlive   = 1
	memberLeaving = 2
	memberLeft    = 3
	memberFailed  = 4
)

// memberStatus names a serf member status.
func memberStatus(st int) string {
	switch st {
	case memberAlive:
		return "alive"
	case memberLeaving:
		return "leaving"
	case memberLeft:
		return "left"
	case memberFailed:
		return "failed"
	}
	return fmt.Sprintf("status %d", st)
}
