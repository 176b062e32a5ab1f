package dockerconsul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
)

// The faults a Node supports beyond faults.Target.
var (
	_ faults.Target              = (*Node)(nil)
	_ faults.CPULimiter          = (*Node)(nil)
	_ faults.CPULimitReader      = (*Node)(nil)
	_ faults.Replacer            = (*Node)(nil)
	_ faults.NetworkDisconnector = (*Node)(nil)
)

// ErrNotRunning is returned when a node has no running container.
var ErrNotRunning = docker.ErrNotRunning

// Node is one Consul agent container of a Cluster: a server or a client
// agent.
type Node struct {
	id      int
	name    string
	server  bool
	cl      *Cluster
	logPath string
	base    docker.Member // the container faults, marks and log tail

	opMu sync.Mutex // serialises Kill, Restart, Replace, Disconnect, Reconnect

	mu   sync.Mutex
	cfg  NodeConfig
	ctr  *Container // nil before the first create and after remove
	addr string     // 127.0.0.1:port of the HTTP API, "" if unknown
	ip   netip.Addr // address on the run network (what Consul advertises)
	logs *docker.LogFollower
}

// ID is the node's number among the servers or among the agents (1..N).
func (n *Node) ID() int { return n.id }

// Name is the node's -node name and network alias, "server1" or "agent2".
func (n *Node) Name() string { return n.name }

// IsServer reports whether the node is a server.
func (n *Node) IsServer() bool { return n.server }

// Role is "server" or "agent".
func (n *Node) Role() string {
	if n.server {
		return "server"
	}
	return "agent"
}

// ContainerName is "<RunID>-consul-<name>".
func (n *Node) ContainerName() string { return ContainerName(n.cl.opts.RunID, n.name) }

// Container returns the node's current container (a Replace makes a new
// one), or nil.
func (n *Node) Container() *Container {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ctr
}

// ContainerID returns the ID of the current container, or "".
func (n *Node) ContainerID() string {
	if c := n.Container(); c != nil {
		return c.GetContainerID()
	}
	return ""
}

// HTTPAddr is "127.0.0.1:port" of the node's published HTTP API as last
// seen (updated by Restart, Replace and Reconnect).
func (n *Node) HTTPAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// IP is the node's address on the run network as last seen: what it
// advertises to the others (a server's raft address is IP:8300).
func (n *Node) IP() netip.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ip
}

// Config is the command line of the node's current container.
func (n *Node) Config() NodeConfig {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cfg
}

// LogPath is the file the node's output is copied to.
func (n *Node) LogPath() string { return n.logPath }

// NewClient returns a Consul API client for the node's HTTP address as of
// now (see NewClient).
func (n *Node) NewClient() (*api.Client, error) {
	addr := n.HTTPAddr()
	if addr == "" {
		return nil, fmt.Errorf("client of %s: %w", n.name, ErrNotRunning)
	}
	return NewClient(addr)
}

func (n *Node) container() (*Container, error) {
	if c := n.Container(); c != nil {
		return c, nil
	}
	return nil, ErrNotRunning
}

// create runs a fresh container for the node and follows its output.
func (n *Node) create(ctx context.Context) error {
	if n.cl.closed.Load() {
		return errors.New("cluster closed")
	}
	n.mark("creating container " + n.ContainerName())
	ctr, err := Run(ctx, n.cl.opts.Image, n.cl.nodeOpts(n.Config())...)
	if ctr != nil {
		n.mu.Lock()
		n.ctr = ctr
		n.mu.Unlock()
		if l := n.base.FollowLogs(ctx, ctr.GetContainerID()); l != nil {
			n.mu.Lock()
			n.logs = l
			n.mu.Unlock()
		}
	}
	if err != nil {
		return err
	}
	if err := n.refreshAddr(ctx); err != nil {
		return err
	}
	n.cl.log.Info("dockerconsul: started", "node", n.name, "container", n.ContainerName(), "id", ctr.GetContainerID()[:12], "http", n.HTTPAddr(), "ip", n.IP())
	return nil
}

// refreshAddr reads the published HTTP port and the address on the run
// network again.
func (n *Node) refreshAddr(ctx context.Context) error {
	c, err := n.container()
	if err != nil {
		return err
	}
	addr, err := c.HTTPAddress(ctx)
	if err != nil {
		return err
	}
	ip, err := c.IP(ctx, n.cl.net.ID)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.addr = addr
	if ip.IsValid() {
		n.ip = ip
	}
	n.mu.Unlock()
	return nil
}

// remove removes the node's container (and any container of its name)
// and waits until the log copy has ended.
func (n *Node) remove(ctx context.Context) error {
	n.mu.Lock()
	c, logs := n.ctr, n.logs
	n.ctr, n.logs = nil, nil
	n.mu.Unlock()
	var dc *docker.Container
	if c != nil {
		dc = c.Container
	}
	return docker.RemoveMember(ctx, dc, n.ContainerName(), logs)
}

// mark appends a line to the node's log.
func (n *Node) mark(what string) { n.base.Mark(what) }

// Leader asks the node for the raft leader's address ("ip:8300"; "" while
// there is none), with a deadline of at most DefaultProbeTimeout: a paused
// node does not answer.
func (n *Node) Leader(ctx context.Context) (string, error) {
	addr := n.HTTPAddr()
	if addr == "" {
		return "", fmt.Errorf("leader from %s: %w", n.name, ErrNotRunning)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	l, err := statusLeader(ctx, addr)
	if err != nil {
		return "", fmt.Errorf("leader from %s: %w", n.name, err)
	}
	return l, nil
}

// Members asks the node for the LAN members it knows (serf: name,
// address, status 1 alive ... 4 failed), with a deadline of at most
// DefaultProbeTimeout.
func (n *Node) Members(ctx context.Context) ([]*api.AgentMember, error) {
	addr := n.HTTPAddr()
	if addr == "" {
		return nil, fmt.Errorf("members from %s: %w", n.name, ErrNotRunning)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	ms, err := agentMembers(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("members from %s: %w", n.name, err)
	}
	return ms, nil
}

// State returns the container's state: running, paused, OOM killed, exit
// code.
func (n *Node) State(ctx context.Context) (State, error) { return n.base.State(ctx) }

// Running reports whether the node's container runs (paused counts).
func (n *Node) Running() bool { return n.base.Running() }

// Paused reports whether the node's container is paused.
func (n *Node) Paused() bool { return n.base.Paused() }

// OOMKilled reports whether the node's container has stopped because the
// kernel's OOM killer killed the agent (its PID 1). Unlike the engine's
// flag in State, which Docker keeps over a restart of the same container,
// it is false again once the node runs.
func (n *Node) OOMKilled() bool { return n.base.OOMKilled() }

// Pause freezes the node's container (docker pause, the freezer cgroup).
// Its published port still accepts connections but nothing answers.
func (n *Node) Pause() error { return n.base.Pause() }

// Resume thaws a paused container.
func (n *Node) Resume() error { return n.base.Resume() }

// Kill sends SIGKILL to the container (through the engine, thawing it
// first if paused) and waits until it has stopped. The container and its
// data stay; Restart starts it again.
func (n *Node) Kill() error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	return n.base.Kill()
}

// Restart starts the node's container again, with the same data (after
// killing it if it still runs; an OOM-killed node is simply started),
// waits until it answers and is alive in its own member list, and updates
// its addresses: the engine may publish its port on another host port.
func (n *Node) Restart(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if err := n.restart(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", n.name, err)
	}
	return nil
}

func (n *Node) restart(ctx context.Context) error {
	if n.cl.closed.Load() {
		return errors.New("cluster closed")
	}
	if err := n.base.StartAgain(ctx); err != nil {
		return err
	}
	if err := n.refreshAddr(ctx); err != nil {
		return err
	}
	n.cl.log.Info("dockerconsul: restarted", "node", n.name, "http", n.HTTPAddr(), "ip", n.IP())
	return n.waitJoined(ctx)
}

// Replace replaces the node by a fresh one: it asks the node to leave the
// cluster gracefully (if it still answers; otherwise a server forces it
// out), removes its container and data, and starts a new container with
// the same name and settings and an empty data directory (a new node ID),
// which joins the servers again. It waits until the new node is alive in
// its own member list and updates its addresses.
func (n *Node) Replace(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if err := n.replace(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", n.name, err)
	}
	n.cl.log.Info("dockerconsul: replaced", "node", n.name, "http", n.HTTPAddr(), "ip", n.IP())
	return nil
}

func (n *Node) replace(ctx context.Context) error {
	if n.cl.closed.Load() {
		return errors.New("cluster closed")
	}
	n.mark("replacing the node with a fresh one")
	left := false
	if addr := n.HTTPAddr(); addr != "" {
		lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		code, _, err := httpDo(lctx, http.MethodPut, addr, "/v1/agent/leave")
		cancel()
		left = err == nil && code == http.StatusOK
	}
	if !left {
		for _, s := range n.cl.servers {
			if s == n || s.HTTPAddr() == "" {
				continue
			}
			fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			code, _, err := httpDo(fctx, http.MethodPut, s.HTTPAddr(), "/v1/agent/force-leave/"+n.name+"?prune=1")
			cancel()
			if err == nil && code == http.StatusOK {
				break
			}
		}
	}
	if err := n.remove(ctx); err != nil {
		return fmt.Errorf("remove old container: %w", err)
	}
	n.mu.Lock()
	n.addr = ""
	n.mu.Unlock()
	if err := n.create(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, n.logTail(25))
	}
	return n.waitJoined(ctx)
}

// LimitCPU limits the live container to cores CPUs (docker update --cpus);
// cores <= 0 lifts the limit (see Container.LimitCPU).
func (n *Node) LimitCPU(cores float64) error { return n.base.LimitCPU(cores) }

// CPULimit returns the container's CPU limit in cores (0: none).
func (n *Node) CPULimit() (float64, error) { return n.base.CPULimit() }

// SetMemoryLimit sets the live container's memory limit in bytes (no
// swap): IL-0206's agents under a pod memory limit. When the agent needs
// more, the kernel OOM-kills it and State reports OOMKilled. See
// Container.SetMemoryLimit for cgroup v1 and v2.
func (n *Node) SetMemoryLimit(bytes int64) error { return n.base.SetMemoryLimit(bytes) }

// MemoryUsage returns the container's memory usage in bytes (the cgroup's:
// page cache included).
func (n *Node) MemoryUsage(ctx context.Context) (uint64, error) {
	c, err := n.container()
	if err != nil {
		return 0, fmt.Errorf("memory usage of %s: %w", n.name, err)
	}
	return c.MemoryUsage(ctx)
}

// MemoryLimit is the memory limit the node's containers start with in
// bytes (a client agent's AgentMemoryLimit; 0: none).
func (n *Node) MemoryLimit() int64 {
	if n.server {
		return 0
	}
	return n.cl.opts.AgentMemoryLimit
}

// SetPidsLimit sets the live container's pids limit (n <= 0: none).
func (n *Node) SetPidsLimit(pids int64) error { return n.base.SetPidsLimit(pids) }

// Disconnect takes the node off the run's network: the other nodes lose
// it (gossip marks it failed), and so does the host (it has no other
// network, so its published port goes too). The agent keeps running.
func (n *Node) Disconnect(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	return n.base.Disconnect(ctx, n.cl.net.ID)
}

// Reconnect puts the node back on the run's network with its alias and
// updates its addresses. Consul advertises the address it had at start,
// so the node asks for that address again; if the engine will not give
// it (it only takes a fixed address on networks with a subnet of the
// user's), the node gets whatever address is free and, if that differs,
// the others cannot reach it until it is restarted (logged as a warning).
func (n *Node) Reconnect(ctx context.Context) error {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	c, err := n.container()
	if err != nil {
		return fmt.Errorf("reconnect %s: %w", n.name, err)
	}
	was := n.IP()
	if err := c.Connect(ctx, n.cl.net.ID, was, n.name); err != nil {
		if !was.IsValid() {
			return fmt.Errorf("reconnect %s: %w", n.name, err)
		}
		n.cl.log.Debug("dockerconsul: cannot reconnect at the same address", "node", n.name, "ip", was, "err", err)
		if err := c.Connect(ctx, n.cl.net.ID, netip.Addr{}, n.name); err != nil {
			return fmt.Errorf("reconnect %s: %w", n.name, err)
		}
	}
	if err := n.refreshAddr(ctx); err != nil {
		return fmt.Errorf("reconnect %s: %w", n.name, err)
	}
	if now := n.IP(); was.IsValid() && now != was {
		n.cl.log.Warn("dockerconsul: reconnected at another address; Consul still advertises the old one until the node restarts", "node", n.name, "was", was, "now", now)
	}
	n.mark("reconnected to the network")
	n.cl.log.Info("dockerconsul: reconnected", "node", n.name, "http", n.HTTPAddr(), "ip", n.IP())
	return nil
}

// waitJoined polls the node's member list until it has joined (it lists
// itself and at least one server alive), its container stops, or ctx
// ends.
func (n *Node) waitJoined(ctx context.Context) error {
	return n.base.WaitFor(ctx, func(ctx context.Context) error {
		ms, err := n.Members(ctx)
		if err == nil {
			err = joined(n.name, n.server && len(n.cl.servers) == 1, ms)
		}
		return err
	})
}

// joined reports whether a member list shows node alive and a server
// other than it alive (a server of a single-server cluster needs none).
func joined(node string, alone bool, ms []*api.AgentMember) error {
	self, server := false, alone
	for _, m := range ms {
		if m.Status != MemberAlive {
			continue
		}
		if m.Name == node {
			self = true
		} else if m.Tags["role"] == "consul" {
			server = true
		}
	}
	switch {
	case !self:
		return fmt.Errorf("%s is not alive in its own member list", node)
	case !server:
		return fmt.Errorf("%s sees no other server alive", node)
	}
	return nil
}

// logTail returns the last n lines of the node's log, indented, for error
// messages.
func (n *Node) logTail(lines int) string { return n.base.LogTail(lines) }
