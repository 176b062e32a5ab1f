// Package dockerconsul runs Consul agents in Docker containers, in the
// style of a testcontainers-go module (testcontainers-go's own consul
// module is not served by the module proxy for v0.45.0, and it runs a
// single dev agent; this is built on generic containers, like
// harness/dockerzk): Run starts one agent container (functional options, a
// Container type with helper methods), and StartCluster starts 1 or 3 (up
// to 7) servers and any number of client agents on a private bridge
// network of the run, with health rules read from every node (one leader
// that every node names, every node alive in every node's member list)
// and container faults: docker pause/unpause, SIGKILL, restart,
// replacement by a fresh node, CPU, memory and pids limits changed live
// (IL-0206: agents under a pod memory limit OOM-killed; State reports
// OOMKilled), and disconnection from the network.
//
// Images: the entrypoint is always set to /bin/consul (the official
// hashicorp/consul image has an entrypoint script that rewrites the
// command and drops privileges; chaoslab's own chaoslab/consul is FROM
// scratch with /bin/consul as ENTRYPOINT) and the whole configuration is
// given as flags, so both work. Nothing is pulled unless asked (no registry
// is reachable on chaoslab's machines): see FindImage.
//
// Only the HTTP API port 8500 of every node is published, on 127.0.0.1
// with a host port the engine picks. Importing this package imports
// harness/docker, which disables testcontainers-go's reaper (Ryuk): Close
// and docker.Sweep clean up instead.
package dockerconsul

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/images"
)

// Images.
const (
	// DefaultImage is what `chaoslab images build` produces: FROM scratch
	// with a static Consul 1.14.11 (the last MPL-2.0 line).
	DefaultImage = images.ConsulRef
	// OfficialImage is HashiCorp's image, for machines that have it.
	OfficialImage = "hashicorp/consul:" + images.ConsulVersion
	// ImageEnv names an image to prefer over the others.
	ImageEnv = "CHAOSLAB_CONSUL_IMAGE"
	// Binary is the agent binary in both images; it is always the
	// entrypoint.
	Binary = "/bin/consul"
)

// HTTPPort is the HTTP API port inside the container.
const HTTPPort = "8500/tcp"

// Component is the value of docker.LabelComponent on the containers.
const Component = "consul"

// DefaultDataDir is the agents' data directory (it exists in both
// images), in the container's writable layer: it survives Restart and
// goes with the container.
const DefaultDataDir = "/consul/data"

// DefaultRetryInterval is -retry-interval: Consul's own default (30 s)
// would leave an agent that came up before the servers alone for 30 s.
const DefaultRetryInterval = time.Second

// DefaultStartupTimeout bounds the wait for one container to answer.
const DefaultStartupTimeout = 60 * time.Second

// DefaultProbeTimeout bounds one HTTP probe when the context has no
// earlier deadline: a paused container's published port still accepts the
// TCP connection (docker-proxy does) but nothing answers.
const DefaultProbeTimeout = time.Second

// Serf member statuses of /v1/agent/members.
const (
	MemberAlive   = 1
	MemberLeaving = 2
	MemberLeft    = 3
	MemberFailed  = 4
)

// ImageCandidates returns the images FindImage tries, in order: $ImageEnv
// (if set), DefaultImage, OfficialImage.
func ImageCandidates() []string {
	var out []string
	if v := strings.TrimSpace(os.Getenv(ImageEnv)); v != "" {
		out = append(out, v)
	}
	return append(out, DefaultImage, OfficialImage)
}

// FindImage returns the first of ImageCandidates and extra present on the
// local engine; the error wraps docker.ErrNoImage if none is.
func FindImage(ctx context.Context, extra ...string) (string, error) {
	img, err := docker.FirstImage(ctx, append(ImageCandidates(), extra...)...)
	if err != nil {
		return "", fmt.Errorf("find consul image: %w", err)
	}
	return img, nil
}

// ---------------------------------------------------------------------------
// Argument rendering (pure, tested without Docker).

// ServerName is the -node name and network alias of server id: "server<id>".
func ServerName(id int) string { return "server" + strconv.Itoa(id) }

// AgentName is the -node name and network alias of client agent id:
// "agent<id>".
func AgentName(id int) string { return "agent" + strconv.Itoa(id) }

// ContainerName is the container name of node (ServerName or AgentName)
// in run runID: "<runID>-consul-<node>".
func ContainerName(runID, node string) string { return runID + "-consul-" + node }

// ServerNames returns the names of servers 1..n (what every node joins).
func ServerNames(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = ServerName(i + 1)
	}
	return out
}

// NodeConfig is one agent's command line.
type NodeConfig struct {
	Name            string        // -node, default "server1"
	Server          bool          // -server
	BootstrapExpect int           // -bootstrap-expect (servers only; 0: none)
	RetryJoin       []string      // one -retry-join each (names the run network resolves)
	RetryInterval   time.Duration // -retry-interval, default DefaultRetryInterval
	DataDir         string        // -data-dir, default DefaultDataDir
	RaftMultiplier  int           // performance.raft_multiplier (servers); 0: Consul's default (5)
	LogLevel        string        // -log-level; "": Consul's default (info)
	ExtraArgs       []string
}

func (c NodeConfig) withDefaults() NodeConfig {
	if c.Name == "" {
		c.Name = ServerName(1)
	}
	if c.RetryInterval <= 0 {
		c.RetryInterval = DefaultRetryInterval
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	return c
}

// Args renders the command (after the entrypoint), defaults filled in.
// The agent binds every address of the container (Consul advertises the
// one private address it has on the run network) and serves its HTTP API
// on all of them.
func (c NodeConfig) Args() []string {
	c = c.withDefaults()
	args := []string{"agent"}
	if c.Server {
		args = append(args, "-server")
		if c.BootstrapExpect > 0 {
			args = append(args, "-bootstrap-expect="+strconv.Itoa(c.BootstrapExpect))
		}
	}
	args = append(args,
		"-node="+c.Name,
		"-client=0.0.0.0",
		"-bind=0.0.0.0",
		"-data-dir="+c.DataDir,
	)
	for _, j := range c.RetryJoin {
		args = append(args, "-retry-join="+j)
	}
	if len(c.RetryJoin) > 0 {
		args = append(args, "-retry-interval="+c.RetryInterval.String())
	}
	if c.Server && c.RaftMultiplier > 0 {
		args = append(args, fmt.Sprintf("-hcl=performance { raft_multiplier = %d }", c.RaftMultiplier))
	}
	if c.LogLevel != "" {
		args = append(args, "-log-level="+c.LogLevel)
	}
	return append(args, c.ExtraArgs...)
}

// standalone reports whether the agent is a server that elects itself.
func (c NodeConfig) standalone() bool {
	return c.Server && c.BootstrapExpect == 1 && len(c.RetryJoin) == 0
}

// Check reports a configuration Consul would refuse.
func (c NodeConfig) Check() error {
	c = c.withDefaults()
	switch {
	case !c.Server && c.BootstrapExpect != 0:
		return fmt.Errorf("BootstrapExpect=%d on a client agent", c.BootstrapExpect)
	case c.BootstrapExpect < 0:
		return fmt.Errorf("BootstrapExpect=%d is negative", c.BootstrapExpect)
	case c.RaftMultiplier < 0 || c.RaftMultiplier > 10:
		return fmt.Errorf("RaftMultiplier=%d, want 0..10", c.RaftMultiplier)
	case strings.ContainsAny(c.Name, " \t/"):
		return fmt.Errorf("node name %q", c.Name)
	}
	return nil
}

// ---------------------------------------------------------------------------
// The module: Run and its options.

// Container is one Consul agent container started by Run.
type Container struct {
	*docker.Container
	settings options
}

type options struct {
	cfg            NodeConfig
	startupTimeout time.Duration
	pull           bool
}

// Option sets state of this module that is not part of the container
// request; it is a testcontainers.ContainerCustomizer so it can be mixed
// with the others.
type Option func(*options) error

// Customize implements testcontainers.ContainerCustomizer; the state is
// read by Run.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

// WithNodeConfig sets the agent's whole command line (see NodeConfig).
func WithNodeConfig(c NodeConfig) Option {
	return func(o *options) error {
		if err := c.Check(); err != nil {
			return err
		}
		o.cfg = c.withDefaults()
		return nil
	}
}

// WithRaftMultiplier sets performance.raft_multiplier (1 is Consul's
// advice for production; its default, 5, elects a leader 5 times slower).
func WithRaftMultiplier(n int) Option {
	return func(o *options) error {
		o.cfg.RaftMultiplier = n
		return o.cfg.Check()
	}
}

// WithExtraArgs adds agent flags after the others.
func WithExtraArgs(args ...string) Option {
	return func(o *options) error {
		o.cfg.ExtraArgs = append(o.cfg.ExtraArgs, args...)
		return nil
	}
}

// WithStartupTimeout bounds the wait for the agent to answer (default
// DefaultStartupTimeout).
func WithStartupTimeout(d time.Duration) Option {
	return func(o *options) error {
		o.startupTimeout = d
		return nil
	}
}

// WithPull lets testcontainers pull the image if it is not present. Without
// it Run fails at once on a missing image.
func WithPull() Option {
	return func(o *options) error {
		o.pull = true
		return nil
	}
}

// Run starts one Consul agent container from img and waits until its HTTP
// API answers (WaitForAgent), or, for a server that elects itself (a
// bootstrap-expect of 1 and nothing to join), until it is leader
// (WaitForLeader). Without options it is such a server, "server1",
// labelled docker.LabelManaged. Add WithRunID, WithNodeConfig, network
// options etc. for a node of a cluster (StartCluster does). On failure the
// container, if one was created, is returned with the error: terminate it.
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	settings := options{
		cfg:            NodeConfig{Name: ServerName(1), Server: true, BootstrapExpect: 1}.withDefaults(),
		startupTimeout: DefaultStartupTimeout,
	}
	for _, opt := range opts {
		if o, ok := opt.(Option); ok {
			if err := o(&settings); err != nil {
				return nil, fmt.Errorf("run consul: %w", err)
			}
		}
	}
	if !settings.pull {
		if err := docker.CheckImage(ctx, img); err != nil {
			return nil, fmt.Errorf("run consul: %w", err)
		}
	}
	cfg := settings.cfg
	var ready wait.Strategy = WaitForAgent().WithStartupTimeout(settings.startupTimeout)
	if cfg.standalone() {
		ready = WaitForLeader().WithStartupTimeout(settings.startupTimeout)
	}
	moduleOpts := []testcontainers.ContainerCustomizer{
		docker.PublishPorts(HTTPPort),
		testcontainers.WithEntrypoint(Binary),
		testcontainers.WithCmd(cfg.Args()...),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(""), map[string]string{docker.LabelComponent: Component})),
		testcontainers.WithWaitStrategyAndDeadline(settings.startupTimeout, ready),
	}
	moduleOpts = append(moduleOpts, opts...)

	ctr, err := testcontainers.Run(ctx, img, moduleOpts...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: &docker.Container{Container: ctr}, settings: settings}
	}
	if err != nil {
		return c, fmt.Errorf("run consul: %w", err)
	}
	return c, nil
}

// ---------------------------------------------------------------------------
// Container helpers.

// Config is the node configuration the container was started with.
func (c *Container) Config() NodeConfig { return c.settings.cfg }

// HTTPAddress returns "127.0.0.1:<host port>" of the HTTP API.
func (c *Container) HTTPAddress(ctx context.Context) (string, error) {
	return docker.HostAddress(ctx, c, HTTPPort)
}

// Leader asks the agent for the raft leader's address ("ip:8300"; ""
// while there is none), deadline from ctx or DefaultProbeTimeout.
func (c *Container) Leader(ctx context.Context) (string, error) {
	addr, err := c.HTTPAddress(ctx)
	if err != nil {
		return "", err
	}
	return statusLeader(ctx, addr)
}

// Members asks the agent for the LAN members it knows.
func (c *Container) Members(ctx context.Context) ([]*api.AgentMember, error) {
	addr, err := c.HTTPAddress(ctx)
	if err != nil {
		return nil, err
	}
	return agentMembers(ctx, addr)
}

// NewClient returns a Consul API client for the agent's HTTP address.
func (c *Container) NewClient(ctx context.Context) (*api.Client, error) {
	addr, err := c.HTTPAddress(ctx)
	if err != nil {
		return nil, err
	}
	return NewClient(addr)
}

// NewClient returns a Consul API client for addr ("127.0.0.1:port"). It
// keeps up to 64 idle connections (a burst of requests reuses them rather
// than opening one per request) and its HTTP client has a 30 s timeout
// (the api package's has none; a blocking query must use a shorter wait).
func NewClient(addr string) (*api.Client, error) {
	cfg := api.DefaultConfig()
	cfg.Address = addr
	cfg.Scheme = "http"
	tr := cfg.Transport
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 64, 64
	hc, err := api.NewHttpClient(tr, cfg.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("new consul client for %s: %w", addr, err)
	}
	hc.Timeout = 30 * time.Second
	cfg.HttpClient = hc
	cli, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("new consul client for %s: %w", addr, err)
	}
	return cli, nil
}

// statusLeader asks GET /v1/status/leader.
func statusLeader(ctx context.Context, addr string) (string, error) {
	code, body, err := httpGet(ctx, addr, "/v1/status/leader")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("leader from %s: HTTP %d %q", addr, code, truncate(strings.TrimSpace(string(body)), 120))
	}
	var leader string
	if err := json.Unmarshal(body, &leader); err != nil {
		return "", fmt.Errorf("leader from %s: %w", addr, err)
	}
	return leader, nil
}

// agentMembers asks GET /v1/agent/members.
func agentMembers(ctx context.Context, addr string) ([]*api.AgentMember, error) {
	code, body, err := httpGet(ctx, addr, "/v1/agent/members")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("members from %s: HTTP %d %q", addr, code, truncate(strings.TrimSpace(string(body)), 120))
	}
	var out []*api.AgentMember
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("members from %s: %w", addr, err)
	}
	return out, nil
}

// probeClient makes one request per connection: a paused or restarted
// container must not hold a pooled connection.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// httpGet GETs http://addr+path with the deadline of ctx, or
// DefaultProbeTimeout when ctx has none.
func httpGet(ctx context.Context, addr, path string) (int, []byte, error) {
	return httpDo(ctx, http.MethodGet, addr, path)
}

func httpDo(ctx context.Context, method, addr, path string) (int, []byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultProbeTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s%s: %w", method, addr, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s%s: %w", method, addr, path, err)
	}
	return resp.StatusCode, body, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
