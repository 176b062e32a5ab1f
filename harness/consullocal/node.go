package consullocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"
	"golang.org/x/sys/unix"
)

// Node is one Consul agent process of a Cluster, a server or a client
// agent. Its process can be paused, killed and restarted; the node's name,
// addresses, data directory and flags stay the same.
type Node struct {
	c       *Cluster
	id      int
	name    string
	server  bool
	addr    string
	ports   ports
	dataDir string
	args    []string
	hook    func(node string, cmd *exec.Cmd) error
	out     io.Writer // the node's log (Options.Logs) and tail
	tail    *tailBuffer
	probe   *api.Client // short timeout, no keep-alive

	mu     sync.Mutex
	proc   *proc // the latest process; nil before the first start
	paused bool
}

// proc is one process of a node.
type proc struct {
	cmd *exec.Cmd
	pid int
	// exited is set (under Node.mu) once the process has exited but
	// before it is reaped: while it is false the pid, and the process
	// group of that id, are still ours, so signalling them is safe.
	exited bool
	done   chan struct{} // closed once reaped
	state  *os.ProcessState
	err    error // cmd.Wait's
}

func newNode(c *Cluster, s nodeSpec) *Node {
	n := &Node{
		c: c, name: s.Name, server: s.Server, addr: s.Addr, ports: s.Ports,
		dataDir: s.DataDir, args: s.args(), tail: &tailBuffer{max: 16 << 10},
	}
	n.hook = c.opts.StartAgent
	if s.Server {
		n.hook = c.opts.StartServer
	}
	n.out = n.tail
	if c.opts.Logs != nil {
		if w := c.opts.Logs(n.name); w != nil {
			n.out = io.MultiWriter(w, n.tail)
		}
	}
	// Only fails on a bad address, which this is not.
	n.probe, _ = newAPIClient(n.HTTPAddr(), probeTimeout, false)
	return n
}

// Name is the node's -node name: "server1", "agent2".
func (n *Node) Name() string { return n.name }

// ID is the node's number among the servers or among the agents (1..N).
func (n *Node) ID() int { return n.id }

// Role is RoleServer ("server") or RoleAgent ("agent"). The raft leader is
// a "server" too: see Cluster.Leader.
func (n *Node) Role() string {
	if n.server {
		return RoleServer
	}
	return RoleAgent
}

// IsServer reports whether the node is a server.
func (n *Node) IsServer() bool { return n.server }

// HTTPAddr is the host:port of the node's HTTP API.
func (n *Node) HTTPAddr() string { return n.hostPort(n.ports.HTTP) }

// DNSAddr is the host:port (UDP and TCP) of the node's DNS interface.
func (n *Node) DNSAddr() string { return n.hostPort(n.ports.DNS) }

// SerfLANAddr is the host:port (TCP and UDP) of the node's LAN gossip.
func (n *Node) SerfLANAddr() string { return n.hostPort(n.ports.SerfLAN) }

// ServerAddr is the host:port of a server's raft and RPC listener (what
// /v1/status/leader names); "" for a client agent.
func (n *Node) ServerAddr() string {
	if !n.server {
		return ""
	}
	return n.hostPort(n.ports.Server)
}

func (n *Node) hostPort(p int) string { return net.JoinHostPort(n.addr, strconv.Itoa(p)) }

// DataDir is the node's -data-dir; it survives Kill and Restart.
func (n *Node) DataDir() string { return n.dataDir }

// Args is the node's command line after the binary.
func (n *Node) Args() []string { return append([]string(nil), n.args...) }

// Pid is the process id of the node's process, or 0 if it is not running.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.proc.exited {
		return 0
	}
	return n.proc.pid
}

// Running reports whether the node's process is alive (paused counts).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.proc.exited
}

// Paused reports whether the node's process was stopped by Pause and not
// resumed since.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.paused && n.proc != nil && !n.proc.exited
}

// Done returns a channel closed when the node's latest process has exited
// and been reaped (nil before the first start).
func (n *Node) Done() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return nil
	}
	return n.proc.done
}

// ExitState is how the node's latest process ended: nil while it runs.
// A process killed by a signal (Kill, an OOM kill) has
// ExitState().Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL.
func (n *Node) ExitState() *os.ProcessState {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.state
	default:
		return nil
	}
}

// Pause stops the node's process with SIGSTOP. Its ports still accept TCP
// connections (the kernel does) but nothing answers.
func (n *Node) Pause() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.signalLocked(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause %s: %w", n.name, err)
	}
	n.paused = true
	n.c.log.Info("consullocal: paused", "node", n.name, "pid", n.proc.pid)
	return nil
}

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.signalLocked(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume %s: %w", n.name, err)
	}
	n.paused = false
	n.c.log.Info("consullocal: resumed", "node", n.name, "pid", n.proc.pid)
	return nil
}

// Kill sends SIGKILL to the node's process group and waits until the
// process is reaped. Its data directory stays; Restart starts it again.
func (n *Node) Kill() error {
	if err := n.kill(); err != nil {
		return fmt.Errorf("kill %s: %w", n.name, err)
	}
	return nil
}

func (n *Node) kill() error {
	n.mu.Lock()
	p := n.proc
	err := n.signalLocked(syscall.SIGKILL)
	n.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		n.c.log.Info("consullocal: killed", "node", n.name, "pid", p.pid)
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("pid %d still alive %v after SIGKILL", p.pid, killWait)
	}
}

// signal sends sig to the process group of the node's process.
func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.signalLocked(sig)
}

// signalLocked signals the node's process group (n.mu held). It is only
// signalled while our process has not exited, so the id cannot have been
// reused by a process we did not start.
func (n *Node) signalLocked(sig syscall.Signal) error {
	p := n.proc
	if p == nil || p.exited {
		return ErrNotRunning
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("send %v to process group %d: %w", sig, p.pid, err)
	}
	return nil
}

// Restart starts the node again with the same data directory, flags and
// start hook (after killing it if it still runs) and waits until it
// answers and has joined: it lists itself alive and, unless it is the only
// server, a server other than itself.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.kill(); err != nil && !errors.Is(err, ErrNotRunning) {
		return fmt.Errorf("restart %s: %w", n.name, err)
	}
	if err := n.start(); err != nil {
		return fmt.Errorf("restart %s: %w", n.name, err)
	}
	if err := n.waitJoined(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", n.name, err)
	}
	return nil
}

// start starts a process of the node through the cluster's starter.
func (n *Node) start() error {
	c := n.c
	c.startMu.RLock()
	defer c.startMu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc != nil && !n.proc.exited {
		return fmt.Errorf("already running as pid %d", n.proc.pid)
	}
	cmd := exec.Command(c.opts.Binary, n.args...)
	cmd.Dir = n.dataDir
	cmd.Stdout, cmd.Stderr = n.out, n.out
	// A process group of its own, so signals go to it alone and a
	// terminal's Ctrl-C does not; SIGKILL when the starter's thread ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(n.out, "=== consullocal %s: %s: %s %s\n", time.Now().Format(time.RFC3339Nano), n.name, c.opts.Binary, strings.Join(n.args, " "))
	var err error
	c.starter.do(func() {
		if n.hook != nil {
			err = n.hook(n.name, cmd)
		} else {
			err = cmd.Start()
		}
	})
	switch {
	case err != nil:
	case cmd.Process == nil:
		err = errors.New("the start hook returned without starting the process")
	case cmd.ProcessState != nil:
		err = errors.New("the start hook waited for the process")
	default:
		// Every signal goes to the process group: it must be the
		// process's own (a hook must keep Setpgid).
		if pg, perr := unix.Getpgid(cmd.Process.Pid); perr == nil && pg != cmd.Process.Pid {
			err = fmt.Errorf("pid %d is in process group %d, not its own (the start hook dropped Setpgid?)", cmd.Process.Pid, pg)
		}
	}
	if err != nil {
		// A hook may have started the process and then failed; unless it
		// reaped it already (then the pid may be another's), kill it.
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		return err
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	n.proc, n.paused = p, false
	c.log.Info("consullocal: started", "node", n.name, "pid", p.pid, "http", n.HTTPAddr(), "dns", n.DNSAddr())
	go n.reap(p)
	return nil
}

// reap waits for p to exit, marks it exited while it is still a zombie (so
// nobody signals a reused pid), then reaps it and publishes its state.
func (n *Node) reap(p *proc) {
	waitExited(p.pid)
	n.mu.Lock()
	p.exited = true
	if n.proc == p {
		n.paused = false
	}
	n.mu.Unlock()
	p.err = p.cmd.Wait()
	p.state = p.cmd.ProcessState
	fmt.Fprintf(n.out, "=== consullocal %s: %s: pid %d exited: %v\n", time.Now().Format(time.RFC3339Nano), n.name, p.pid, p.state)
	n.c.log.Info("consullocal: exited", "node", n.name, "pid", p.pid, "state", p.state.String())
	close(p.done)
}

// exited returns why the node's process is not running, with the end of
// its output, or nil if it runs.
func (n *Node) exited() error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	switch {
	case p == nil:
		return fmt.Errorf("%s: never started", n.name)
	case !p.exited:
		return nil
	}
	<-p.done
	return fmt.Errorf("%s (pid %d) %v; its last output:\n%s", n.name, p.pid, p.state, n.LogTail(10))
}

// LogTail returns the last lines of the node's output (of every
// incarnation), indented.
func (n *Node) LogTail(lines int) string {
	ls := strings.Split(strings.TrimRight(n.tail.String(), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return "    " + strings.Join(ls, "\n    ")
}

// NewClient returns a Consul API client of the node's HTTP API, keeping
// up to 64 idle connections, with a 30 s timeout per request (the api
// package's own client has none: a blocking query must wait less).
func (n *Node) NewClient() (*api.Client, error) {
	return newAPIClient(n.HTTPAddr(), 30*time.Second, true)
}

// Members asks the node for the LAN members it knows (probe deadline 1 s).
func (n *Node) Members(ctx context.Context) ([]*api.AgentMember, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ms, err := n.probe.Agent().Members(false)
	if err != nil {
		return nil, fmt.Errorf("%s: members: %w", n.name, err)
	}
	return ms, nil
}

// LeaderAddr asks the node for the raft leader's address (a server's
// ServerAddr; "" while there is none), probe deadline 1 s.
func (n *Node) LeaderAddr(ctx context.Context) (string, error) {
	q := (&api.QueryOptions{}).WithContext(ctx)
	l, err := n.probe.Status().LeaderWithQueryOptions(q)
	if err != nil {
		return "", fmt.Errorf("%s: leader: %w", n.name, err)
	}
	return l, nil
}

// waitJoined polls the node until it lists itself alive and, unless it
// is the only server, a server other than itself, its process exits, or
// ctx ends.
func (n *Node) waitJoined(ctx context.Context) error {
	alone := n.server && len(n.c.servers) == 1
	var last error
	for {
		if err := n.exited(); err != nil {
			return err
		}
		ms, err := n.Members(ctx)
		if err == nil {
			err = joined(n.name, alone, ms)
		}
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait until it has joined: %w (last: %v)", ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// joined reports whether a member list shows node alive and a server
// other than it alive (alone: the only server needs none).
func joined(node string, alone bool, ms []*api.AgentMember) error {
	self, server := false, alone
	for _, m := range ms {
		if m.Status != MemberAlive {
			continue
		}
		if m.Name == node {
			self = true
		} else if m.IsConsulServer() {
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

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		if i := bytes.IndexByte(t.buf[over:], '\n'); i >= 0 {
			over += i + 1
		}
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
