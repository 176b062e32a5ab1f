package dockerconsul

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/docker"
)

// DefaultStartTimeout bounds StartCluster when its context has no deadline.
const DefaultStartTimeout = 2 * time.Minute

// MaxServers is the largest number of servers StartCluster accepts;
// MaxAgents the largest number of client agents.
const (
	MaxServers = 7
	MaxAgents  = 50
)

// Options configures StartCluster. The zero value gives 3 servers and no
// client agents with Consul's own timing, from the first image FindImage
// finds.
type Options struct {
	Servers int    // 1..7, default 3
	Agents  int    // client agents, 0..50
	Image   string // default: FindImage

	// RunID names the run: containers are "<RunID>-consul-serverN" and
	// "<RunID>-consul-agentN", and everything is labelled
	// docker.LabelRun=RunID (see docker.Sweep). Default: "chaoslab-" and
	// 8 random hex digits.
	RunID string
	// Network, when set, is a network of the caller's (a placement's site)
	// that the containers join instead of one of their own; Close leaves it.
	Network *testcontainers.DockerNetwork
	// LogDir receives serverN.log and agentN.log, each node's output
	// (appended over restarts and replacements). Default: a new directory
	// under os.TempDir(). Nothing is removed by Close.
	LogDir string
	Logger *slog.Logger // default slog.Default()

	// RaftMultiplier is the servers' performance.raft_multiplier; 0 keeps
	// Consul's default (5); 1 elects and detects a lost leader 5 times
	// sooner.
	RaftMultiplier int
	// AgentMemoryLimit is every client agent's container memory limit in
	// bytes from the start (no swap); 0: none. Node.SetMemoryLimit changes
	// it live.
	AgentMemoryLimit int64
	// AgentBinary, when set, is a consul binary on this machine that the
	// client agents' containers run instead of the image's (bind-mounted
	// read-only at Binary). Its pages are read into this machine's page
	// cache first, so that, as for a local process, an agent's memory
	// limit holds the agent's own memory and not its executable's pages:
	// otherwise the kernel reclaims those clean pages to make room for the
	// heap, and an agent at its limit thrashes instead of being killed.
	AgentBinary string
	// AgentEnv is more environment for every client agent's container
	// (e.g. GOMEMLIMIT, a soft limit for its Go runtime).
	AgentEnv  map[string]string
	LogLevel  string   // -log-level; "": Consul's default (info)
	ExtraArgs []string // more agent flags for every node

	// StartupTimeout bounds the wait for one container to answer (default
	// DefaultStartupTimeout).
	StartupTimeout time.Duration
	// Customizers are applied to every node's container after this
	// package's own options (e.g. WithCPULimit).
	Customizers []testcontainers.ContainerCustomizer
}

func (o Options) withDefaults(ctx context.Context) (Options, error) {
	if o.Servers == 0 {
		o.Servers = 3
	}
	if o.Servers < 1 || o.Servers > MaxServers {
		return o, fmt.Errorf("check options: Servers=%d, want 1..%d", o.Servers, MaxServers)
	}
	if o.Agents < 0 || o.Agents > MaxAgents {
		return o, fmt.Errorf("check options: Agents=%d, want 0..%d", o.Agents, MaxAgents)
	}
	if o.AgentMemoryLimit < 0 {
		return o, fmt.Errorf("check options: AgentMemoryLimit=%d is negative", o.AgentMemoryLimit)
	}
	if o.RunID == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.RunID = "chaoslab-" + hex.EncodeToString(b)
	}
	if err := docker.CheckRunID(o.RunID); err != nil {
		return o, fmt.Errorf("check options: %w", err)
	}
	if err := o.nodeConfig(true, 1).Check(); err != nil {
		return o, fmt.Errorf("check options: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = DefaultStartupTimeout
	}
	if o.Image == "" {
		img, err := FindImage(ctx)
		if err != nil {
			return o, err
		}
		o.Image = img
	}
	return o, nil
}

// nodeConfig is the command line of server or agent id: servers expect
// all servers and every node joins all servers by name.
func (o Options) nodeConfig(server bool, id int) NodeConfig {
	c := NodeConfig{
		RetryJoin: ServerNames(o.Servers), LogLevel: o.LogLevel, ExtraArgs: slices.Clone(o.ExtraArgs),
	}
	if server {
		c.Name, c.Server, c.BootstrapExpect, c.RaftMultiplier = ServerName(id), true, o.Servers, o.RaftMultiplier
	} else {
		c.Name = AgentName(id)
	}
	return c.withDefaults()
}

// Cluster is a running set of Consul containers started by StartCluster.
type Cluster struct {
	opts    Options
	log     *slog.Logger
	net     *testcontainers.DockerNetwork
	servers []*Node // servers[i].ID() == i+1
	agents  []*Node

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// StartCluster creates a labelled bridge network for the run and one
// container per node on it (alias serverN or agentN, name
// "<RunID>-consul-<node>", HTTP port published on 127.0.0.1), follows each
// node's output into LogDir/<node>.log, and waits until the servers have a
// leader that every node names and every node sees every node alive
// (WaitHealthy). The wait ends with ctx (DefaultStartTimeout if ctx has no
// deadline). On failure everything created is removed and the error
// carries the tail of the failing nodes' logs.
func StartCluster(ctx context.Context, o Options) (*Cluster, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := docker.Available(ctx); err != nil {
		return nil, fmt.Errorf("start consul cluster: %w", err)
	}
	o, err := o.withDefaults(ctx)
	if err != nil {
		return nil, fmt.Errorf("start consul cluster: %w", err)
	}
	if err := docker.CheckImage(ctx, o.Image); err != nil {
		return nil, fmt.Errorf("start consul cluster: %w", err)
	}
	if o.LogDir, err = docker.LogDir(o.LogDir, "dockerconsul-"+o.RunID+"-"); err != nil {
		return nil, fmt.Errorf("start consul cluster: %w", err)
	}
	if o.AgentBinary != "" {
		if err := cachePages(o.AgentBinary); err != nil {
			return nil, fmt.Errorf("start consul cluster: %w", err)
		}
	}
	began := time.Now()
	c := &Cluster{opts: o, log: o.Logger}
	for id := 1; id <= o.Servers; id++ {
		c.servers = append(c.servers, c.newNode(true, id))
	}
	for id := 1; id <= o.Agents; id++ {
		c.agents = append(c.agents, c.newNode(false, id))
	}
	c.net = o.Network
	if c.net == nil {
		if c.net, err = docker.NewNetwork(ctx, o.RunID, Component); err != nil {
			return nil, fmt.Errorf("start consul cluster: %w", err)
		}
	}
	fail := func(err error, bad []*Node) (*Cluster, error) {
		return nil, fmt.Errorf("start consul cluster: %w", docker.FailStart(err, bad, func(n *Node) string { return n.logTail(25) }, c.Close))
	}
	c.log.Info("dockerconsul: starting", "run", o.RunID, "servers", o.Servers, "agents", o.Agents, "image", o.Image, "network", c.net.Name, "logs", o.LogDir)

	// Create every node at the same time: each answers on its HTTP port as
	// soon as it runs, and retries joining the servers every second.
	if bad, err := docker.CreateAll(ctx, c.Nodes(), (*Node).create); err != nil {
		return fail(err, bad)
	}
	if bad, err := c.waitHealthy(ctx); err != nil {
		return fail(err, bad)
	}
	c.log.Info("dockerconsul: healthy", "run", o.RunID, "servers", o.Servers, "agents", o.Agents, "http", strings.Join(c.HTTPAddrs(), ","), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

func (c *Cluster) newNode(server bool, id int) *Node {
	cfg := c.opts.nodeConfig(server, id)
	n := &Node{
		id: id, name: cfg.Name, server: server, cl: c, cfg: cfg,
		logPath: filepath.Join(c.opts.LogDir, cfg.Name+".log"),
	}
	n.base = docker.Member{
		Name: n.name, LogPath: n.logPath, Prefix: "dockerconsul", Key: "node", Log: c.log,
		Container: docker.Current(n.Container),
	}
	return n
}

// nodeOpts are the container options of a node with this command line.
func (c *Cluster) nodeOpts(cfg NodeConfig) []testcontainers.ContainerCustomizer {
	o := c.opts
	opts := []testcontainers.ContainerCustomizer{
		WithNodeConfig(cfg),
		WithStartupTimeout(o.StartupTimeout),
		WithRunID(o.RunID),
		testcontainers.WithLabels(map[string]string{docker.LabelComponent: Component, docker.LabelMember: cfg.Name}),
		testcontainers.WithName(ContainerName(o.RunID, cfg.Name)),
		network.WithNetwork([]string{cfg.Name}, c.net),
		testcontainers.WithLogger(docker.SlogPrintf(c.log)),
	}
	if !cfg.Server && o.AgentMemoryLimit > 0 {
		opts = append(opts, WithMemoryLimit(o.AgentMemoryLimit))
	}
	if !cfg.Server && o.AgentBinary != "" {
		opts = append(opts, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, o.AgentBinary+":"+Binary+":ro")
		}))
	}
	if !cfg.Server && len(o.AgentEnv) > 0 {
		opts = append(opts, testcontainers.WithEnv(o.AgentEnv))
	}
	return append(opts, o.Customizers...)
}

// Servers returns the servers; Servers()[i].ID() == i+1.
func (c *Cluster) Servers() []*Node { return append([]*Node(nil), c.servers...) }

// Agents returns the client agents; Agents()[i].ID() == i+1.
func (c *Cluster) Agents() []*Node { return append([]*Node(nil), c.agents...) }

// Nodes returns the servers, then the agents.
func (c *Cluster) Nodes() []*Node {
	return append(c.Servers(), c.agents...)
}

// Node returns the node called name ("server1", "agent2"), or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes() {
		if n.name == name {
			return n
		}
	}
	return nil
}

// HTTPAddrs returns every node's HTTP address ("127.0.0.1:port"), servers
// first, as of now: a restart, replacement or reconnection may change a
// node's port.
func (c *Cluster) HTTPAddrs() []string {
	nodes := c.Nodes()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.HTTPAddr()
	}
	return out
}

// NewClient returns a Consul API client for the first client agent (the
// first server if there is none), as applications talk to their local
// agent.
func (c *Cluster) NewClient() (*api.Client, error) {
	n := c.servers[0]
	if len(c.agents) > 0 {
		n = c.agents[0]
	}
	return n.NewClient()
}

// RunID is the run the cluster's containers and network are labelled with.
func (c *Cluster) RunID() string { return c.opts.RunID }

// Network is the name of the run's bridge network.
func (c *Cluster) Network() string { return c.net.Name }

// LogDir is the folder of the nodes' logs.
func (c *Cluster) LogDir() string { return c.opts.LogDir }

// Options returns the options the cluster runs with, defaults filled in.
func (c *Cluster) Options() Options { return c.opts }

// closeTimeout bounds Close.
const closeTimeout = 2 * time.Minute

// Close removes every node's container (thawed first if paused; SIGKILL,
// with its anonymous volumes) and the network, waits until the log copies
// have ended and joins the errors; it always tries everything. The log
// folder is kept. Close is idempotent and stops Restart and Replace from
// starting anything again.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := docker.RemoveAll(ctx, c.ownNet(), c.Nodes(), (*Node).remove); err != nil {
			c.closeErr = fmt.Errorf("close consul cluster: %w", err)
		}
		c.log.Info("dockerconsul: closed", "run", c.opts.RunID, "err", c.closeErr)
	})
	return c.closeErr
}

// ownNet is the network Close removes: none when it is the caller's.
func (c *Cluster) ownNet() *testcontainers.DockerNetwork {
	if c.opts.Network != nil {
		return nil
	}
	return c.net
}

// cachePages reads the file at path to its end, so that its pages are in
// this machine's page cache, charged to this process's cgroup.
func cachePages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read agent binary: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("read agent binary: %w", err)
	}
	return nil
}
