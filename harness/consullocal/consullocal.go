// Package consullocal runs a real Consul cluster as local processes on
// loopback, in the style of harness/etcdlocal and of Consul's own
// sdk/testutil: 1 to 5 servers and 0 to 20 client agents (`consul agent`
// without -server, each a process of its own, as on a Kubernetes node),
// every listener on 127.0.0.1 with ports of its own from harness/freeport,
// a data directory per node, output routed to a writer per node, faults
// on processes (SIGSTOP, SIGCONT, SIGKILL, a restart on the same data) and
// every process it started stopped by Close.
//
// Every process is started in a process group of its own (Setpgid, so
// signals reach it and nothing else) with Pdeathsig SIGKILL, from one OS
// thread that lives as long as the cluster (Pdeathsig fires when the thread
// that started a child ends, not the process: see golang/go#27505), so
// nothing outlives the harness. A start hook (Options.StartServer,
// Options.StartAgent) can start a node's process itself, e.g. to put it in
// a memory cgroup.
package consullocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"
	"golang.org/x/sys/unix"

	"github.com/chaoslab/chaoslab/harness/freeport"
)

// DefaultStartTimeout bounds Start's wait for a healthy cluster when ctx
// has no earlier deadline.
const DefaultStartTimeout = 60 * time.Second

// StopTimeout is how long Close waits after SIGTERM before SIGKILL.
const StopTimeout = 5 * time.Second

// killWait bounds the wait for a SIGKILLed process to be reaped.
const killWait = 30 * time.Second

// ErrNotRunning is returned when a node has no live process of ours.
var ErrNotRunning = errors.New("not running")

// ErrClosed is returned when a node is to be started after Close.
var ErrClosed = errors.New("cluster closed")

// Options of a cluster.
type Options struct {
	// Servers is the number of servers (default 1; 1..MaxServers). They
	// expect each other (-bootstrap-expect) and join each other.
	Servers int
	// Agents is the number of client agents (0..MaxAgents). Each joins
	// every server.
	Agents int
	// Binary is the consul binary (required; images.ConsulBinary).
	Binary string
	// Dir holds a data directory per node, Dir/<node>, which must be
	// absent or empty (default: a new temporary directory, removed by
	// Close; a given Dir is left as it is).
	Dir string
	// Logs, when set, returns where a node's output (stdout and stderr of
	// every incarnation) goes; it is called once per node by Start.
	Logs func(node string) io.Writer
	// Logger gets the cluster's events (default slog.Default()).
	Logger *slog.Logger
	// RaftMultiplier is the servers' performance.raft_multiplier, 1..10
	// (0: DefaultRaftMultiplier, 1; Consul's own default is 5).
	RaftMultiplier int
	// ExtraArgs are more `consul agent` flags for every node, after the
	// others (so they override: -log-level=warn, -retry-interval=1s, ...).
	ExtraArgs []string
	// StartServer and StartAgent, when set, start a server's or a client
	// agent's process instead of cmd.Start, e.g. to put it in a cgroup
	// with a memory limit, at Start and at every Restart. The hook must
	// call cmd.Start (cmd.Process set when it returns nil) and keep
	// cmd.SysProcAttr's Setpgid and Pdeathsig; the cluster waits for the
	// process and signals its process group. If the hook fails after
	// starting the process, the process is killed.
	StartServer func(node string, cmd *exec.Cmd) error
	StartAgent  func(node string, cmd *exec.Cmd) error
}

// Cluster is a running local Consul cluster.
type Cluster struct {
	opts    Options
	log     *slog.Logger
	dir     string
	tmp     bool
	servers []*Node
	agents  []*Node
	starter *starter

	startMu sync.RWMutex // held (read) while a process starts; Close takes it
	closed  bool

	closeOnce sync.Once
	closeErr  error
}

// Start starts every node at once and waits until the cluster is healthy
// (WaitHealthy) or ctx ends (DefaultStartTimeout if ctx has no deadline).
// On error every process it started is stopped again (Close) and the
// cluster is nil.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("start consul: %w", err)
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("start consul: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	began := time.Now()
	c = &Cluster{opts: o, log: o.Logger, dir: o.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "chaoslab-consul-"); err != nil {
			return nil, fmt.Errorf("start consul: %w", err)
		}
		c.tmp = true
	}
	c.starter = newStarter()
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	ps, err := pickPorts(Address, o.Servers*portCount(true)+o.Agents*portCount(false))
	if err != nil {
		return c, fmt.Errorf("start consul: %w", err)
	}
	specs, err := plan(o, Address, c.dir, ps)
	if err != nil {
		return c, fmt.Errorf("start consul: %w", err)
	}
	for i, s := range specs {
		n := newNode(c, s)
		if s.Server {
			n.id = i + 1
			c.servers = append(c.servers, n)
		} else {
			n.id = i + 1 - o.Servers
			c.agents = append(c.agents, n)
		}
	}
	for _, n := range c.Nodes() {
		// Data of an earlier cluster names other ports (raft peers, serf
		// snapshot): a node must start empty.
		if es, err := os.ReadDir(n.dataDir); err == nil && len(es) > 0 {
			return c, fmt.Errorf("start consul: %s is not empty (data of an earlier cluster?)", n.dataDir)
		}
		if err := os.MkdirAll(n.dataDir, 0o700); err != nil {
			return c, fmt.Errorf("start consul: %w", err)
		}
	}
	for _, n := range c.Nodes() {
		if err := n.start(); err != nil {
			return c, fmt.Errorf("start consul: %s: %w", n.name, err)
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return c, fmt.Errorf("start consul: %w", err)
	}
	c.log.Info("consullocal: healthy", "servers", o.Servers, "agents", o.Agents, "dir", c.dir,
		"http", strings.Join(c.HTTPAddrs(), ","), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// pickPorts returns n ports free on addr for TCP and for UDP (serf and DNS
// use both), from freeport (which checks TCP on 127.0.0.1 only).
func pickPorts(addr string, n int) ([]int, error) {
	var last error
	for range 5 {
		ps, err := freeport.Loopback(n)
		if err != nil {
			return nil, err
		}
		last = nil
		for _, p := range ps {
			if err := freeUDP(addr, p); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return ps, nil
		}
	}
	return nil, fmt.Errorf("pick free ports: %w", last)
}

func freeUDP(addr string, port int) error {
	l, err := net.ListenPacket("udp", net.JoinHostPort(addr, fmt.Sprint(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// Nodes returns the servers, then the agents.
func (c *Cluster) Nodes() []*Node { return append(c.Servers(), c.agents...) }

// Servers returns the servers; Servers()[i].Name() is ServerName(i+1).
func (c *Cluster) Servers() []*Node { return append([]*Node(nil), c.servers...) }

// Agents returns the client agents; Agents()[i].Name() is AgentName(i+1).
func (c *Cluster) Agents() []*Node { return append([]*Node(nil), c.agents...) }

// Node returns the node called name ("server1", "agent2"), or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes() {
		if n.name == name {
			return n
		}
	}
	return nil
}

// HTTPAddrs returns every node's HTTP address, servers first.
func (c *Cluster) HTTPAddrs() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.HTTPAddr())
	}
	return out
}

// Dir is the folder of the nodes' data directories.
func (c *Cluster) Dir() string { return c.dir }

// NewClient returns a Consul API client of node n's HTTP API (nil n: the
// first client agent, as applications talk to their local agent, or the
// first server if there is no agent). See Node.NewClient.
func (c *Cluster) NewClient(n *Node) (*api.Client, error) {
	if n == nil {
		if len(c.agents) > 0 {
			n = c.agents[0]
		} else {
			n = c.servers[0]
		}
	}
	return n.NewClient()
}

// Close stops every process the cluster started (SIGTERM, and SIGCONT for
// a paused one, to its process group; SIGKILL after StopTimeout), waits
// until they are reaped and removes a temporary data folder. Errors are
// joined; Close is idempotent, and no node can be started afterwards.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.startMu.Lock()
		c.closed = true
		c.startMu.Unlock()
		var errs []error
		var live []*Node
		for _, n := range c.Nodes() {
			if err := n.signal(syscall.SIGTERM); err == nil {
				_ = n.signal(syscall.SIGCONT)
				live = append(live, n)
			} else if !errors.Is(err, ErrNotRunning) {
				errs = append(errs, err)
			}
		}
		deadline := time.After(StopTimeout)
		for _, n := range live {
			done := n.Done()
			select {
			case <-done:
				continue
			case <-deadline:
			}
			c.log.Warn("consullocal: still running after SIGTERM, killing", "node", n.name, "after", StopTimeout)
			if err := n.signal(syscall.SIGKILL); err != nil && !errors.Is(err, ErrNotRunning) {
				errs = append(errs, err)
			}
			select {
			case <-done:
			case <-time.After(killWait):
				errs = append(errs, fmt.Errorf("close consul: %s (pid %d) still alive %v after SIGKILL", n.name, n.Pid(), killWait))
			}
			// Once the deadline has passed every other node is killed at once.
			deadline = closedTime
		}
		if c.starter != nil {
			c.starter.stop()
		}
		if c.tmp {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, fmt.Errorf("close consul: %w", err))
			}
		}
		c.closeErr = errors.Join(errs...)
		c.log.Info("consullocal: closed", "dir", c.dir, "removed", c.tmp)
	})
	return c.closeErr
}

var closedTime = func() <-chan time.Time {
	ch := make(chan time.Time)
	close(ch)
	return ch
}()

// starter runs functions on one OS thread locked for the cluster's life:
// the children it forks get Pdeathsig when that thread ends, which then is
// when the starter stops (after Close) or the process dies.
type starter struct {
	reqs chan func()
	once sync.Once
}

func newStarter() *starter {
	s := &starter{reqs: make(chan func())}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread ends with this goroutine.
		for f := range s.reqs {
			f()
		}
	}()
	return s
}

// do runs f on the starter's thread and returns when f has.
func (s *starter) do(f func()) {
	done := make(chan struct{})
	s.reqs <- func() {
		defer close(done)
		f()
	}
	<-done
}

func (s *starter) stop() { s.once.Do(func() { close(s.reqs) }) }

// probeTimeout bounds one health probe: a paused node accepts the TCP
// connection (the kernel does) but answers nothing.
const probeTimeout = time.Second

// newAPIClient returns a Consul API client for addr with an HTTP client
// of the given timeout; keepAlive false makes one connection per request
// (a probe must not sit on a pooled connection to a paused or restarted
// node).
func newAPIClient(addr string, timeout time.Duration, keepAlive bool) (*api.Client, error) {
	cfg := api.DefaultNonPooledConfig()
	if keepAlive {
		cfg = api.DefaultConfig()
		cfg.Transport.MaxIdleConns, cfg.Transport.MaxIdleConnsPerHost = 64, 64
	}
	// Nothing from CONSUL_HTTP_* and the like in the environment.
	cfg.Address, cfg.Scheme, cfg.PathPrefix, cfg.Datacenter = addr, "http", "", ""
	cfg.HttpAuth, cfg.Token, cfg.TokenFile, cfg.Namespace, cfg.Partition = nil, "", "", "", ""
	cfg.TLSConfig = api.TLSConfig{}
	cfg.HttpClient = &http.Client{Transport: cfg.Transport, Timeout: timeout}
	cli, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("consul client for %s: %w", addr, err)
	}
	return cli, nil
}

// waitExited blocks until pid has exited, without reaping it.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			return
		}
	}
}
