// Package dockeretcd runs etcd members in Docker containers, in the style
// of a testcontainers-go module (testcontainers-go's own etcd module is
// not served by the module proxy for v0.45.0, so this is built on generic
// containers, like harness/dockerzk): Run starts one member container
// (functional options, a Container type with helper methods), and
// StartCluster starts a cluster of 1 or 3 (up to 7) members on a private
// bridge network of the run, with health rules read from every member's
// Status (one leader that every member names, one raft term) and container
// faults: docker pause/unpause, SIGKILL, restart, replacement by a fresh
// member (member remove + add), CPU, memory and pids limits changed live,
// and disconnection from the network.
//
// Images: the entrypoint is always set to /usr/local/bin/etcd (the
// official gcr.io/etcd-development/etcd image has none; chaoslab's own
// chaoslab/etcd is FROM scratch with it as ENTRYPOINT) and the whole
// configuration is given as flags, so both work. Nothing is pulled unless
// asked (no registry is reachable on chaoslab's machines): see FindImage.
//
// The client port 2379 and the metrics port 2381 are published on
// 127.0.0.1 only, with host ports the engine picks; the Go client and the
// health probes use them. Importing this package imports harness/docker,
// which disables testcontainers-go's reaper (Ryuk): Close and docker.Sweep
// clean up instead.
package dockeretcd

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

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/images"
)

// Images.
const (
	// DefaultImage is what `chaoslab images build` produces: FROM scratch
	// with static etcd, etcdctl and etcdutl.
	DefaultImage = images.EtcdRef
	// OfficialImage is the etcd project's image, for machines that have it.
	OfficialImage = "gcr.io/etcd-development/etcd:" + images.EtcdVersion
	// ImageEnv names an image to prefer over the others.
	ImageEnv = "CHAOSLAB_ETCD_IMAGE"
	// Binary is the server binary in both images; it is always the
	// entrypoint.
	Binary = "/usr/local/bin/etcd"
)

// Ports inside the container.
const (
	ClientPort  = "2379/tcp"
	PeerPort    = "2380/tcp"
	MetricsPort = "2381/tcp"
)

// Component is the value of docker.LabelComponent on the containers.
const Component = "etcd"

// DefaultDataDir is the members' data directory: in the container's
// writable layer, so it survives Restart (a tmpfs would not) and goes with
// the container.
const DefaultDataDir = "/tmp/etcd"

// DefaultStartupTimeout bounds the wait for one container to answer.
const DefaultStartupTimeout = 60 * time.Second

// DefaultProbeTimeout bounds one health probe or Status call when the
// context has no earlier deadline: a paused container's published port
// still accepts the TCP connection (docker-proxy does) but nothing answers.
const DefaultProbeTimeout = time.Second

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
		return "", fmt.Errorf("find etcd image: %w", err)
	}
	return img, nil
}

// ---------------------------------------------------------------------------
// Flag rendering (pure, tested without Docker).

// MemberName is the network alias, hostname and --name of member id:
// "etcd<id>".
func MemberName(id int) string { return "etcd" + strconv.Itoa(id) }

// ContainerName is the container name of member id in run runID.
func ContainerName(runID string, id int) string { return runID + "-" + MemberName(id) }

// PeerURL is the peer URL of the member called name.
func PeerURL(name string) string { return "http://" + name + ":2380" }

// ClientURL is the client URL (inside the network) of the member called name.
func ClientURL(name string) string { return "http://" + name + ":2379" }

// InitialCluster renders --initial-cluster for members 1..n reachable by
// their aliases: "etcd1=http://etcd1:2380,etcd2=http://etcd2:2380,...".
func InitialCluster(n int) string {
	parts := make([]string, n)
	for i := range n {
		parts[i] = MemberName(i+1) + "=" + PeerURL(MemberName(i+1))
	}
	return strings.Join(parts, ",")
}

// Cluster states of --initial-cluster-state.
const (
	StateNew      = "new"
	StateExisting = "existing"
)

// MemberConfig is one member's command line.
type MemberConfig struct {
	Name           string // --name; also the host name the URLs use
	InitialCluster string // --initial-cluster, default "<Name>=http://<Name>:2380"
	ClusterState   string // --initial-cluster-state: new (default) or existing
	ClusterToken   string // --initial-cluster-token, default "chaoslab"
	DataDir        string // --data-dir, default DefaultDataDir
	HeartbeatMS    int    // --heartbeat-interval; 0: etcd's default (100)
	ElectionMS     int    // --election-timeout; 0: etcd's default (1000)
	QuotaBytes     int64  // --quota-backend-bytes; 0: etcd's default (2 GiB)
	LogLevel       string // --log-level; "": etcd's default (info)
	ExtraArgs      []string
}

func (c MemberConfig) withDefaults() MemberConfig {
	if c.Name == "" {
		c.Name = MemberName(1)
	}
	if c.InitialCluster == "" {
		c.InitialCluster = c.Name + "=" + PeerURL(c.Name)
	}
	if c.ClusterState == "" {
		c.ClusterState = StateNew
	}
	if c.ClusterToken == "" {
		c.ClusterToken = "chaoslab"
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	return c
}

// Members is the number of members in InitialCluster.
func (c MemberConfig) Members() int {
	return len(strings.Split(c.withDefaults().InitialCluster, ","))
}

// Args renders the flags (after the entrypoint), defaults filled in. The
// member listens on every address of the container and advertises its
// name, which the run network's DNS (alias) and its own /etc/hosts
// (hostname) resolve.
func (c MemberConfig) Args() []string {
	c = c.withDefaults()
	args := []string{
		"--name=" + c.Name,
		"--data-dir=" + c.DataDir,
		"--listen-client-urls=http://0.0.0.0:2379",
		"--advertise-client-urls=" + ClientURL(c.Name),
		"--listen-peer-urls=http://0.0.0.0:2380",
		"--initial-advertise-peer-urls=" + PeerURL(c.Name),
		"--listen-metrics-urls=http://0.0.0.0:2381",
		"--initial-cluster=" + c.InitialCluster,
		"--initial-cluster-state=" + c.ClusterState,
		"--initial-cluster-token=" + c.ClusterToken,
	}
	if c.HeartbeatMS > 0 {
		args = append(args, "--heartbeat-interval="+strconv.Itoa(c.HeartbeatMS))
	}
	if c.ElectionMS > 0 {
		args = append(args, "--election-timeout="+strconv.Itoa(c.ElectionMS))
	}
	if c.QuotaBytes > 0 {
		args = append(args, "--quota-backend-bytes="+strconv.FormatInt(c.QuotaBytes, 10))
	}
	if c.LogLevel != "" {
		args = append(args, "--log-level="+c.LogLevel)
	}
	return append(args, c.ExtraArgs...)
}

// Check reports a configuration etcd would refuse.
func (c MemberConfig) Check() error {
	c = c.withDefaults()
	if c.ClusterState != StateNew && c.ClusterState != StateExisting {
		return fmt.Errorf("ClusterState=%q, want %q or %q", c.ClusterState, StateNew, StateExisting)
	}
	if c.HeartbeatMS < 0 || c.ElectionMS < 0 || c.QuotaBytes < 0 {
		return fmt.Errorf("negative HeartbeatMS=%d, ElectionMS=%d or QuotaBytes=%d", c.HeartbeatMS, c.ElectionMS, c.QuotaBytes)
	}
	if c.HeartbeatMS > 0 || c.ElectionMS > 0 {
		hb, el := c.HeartbeatMS, c.ElectionMS
		if hb == 0 {
			hb = 100
		}
		if el == 0 {
			el = 1000
		}
		if el < 5*hb {
			return fmt.Errorf("ElectionMS=%d must be at least 5 x HeartbeatMS=%d", el, hb)
		}
	}
	if !strings.Contains(","+c.InitialCluster, ","+c.Name+"=") {
		return fmt.Errorf("InitialCluster %q does not name member %s", c.InitialCluster, c.Name)
	}
	return nil
}

// ---------------------------------------------------------------------------
// The module: Run and its options.

// Container is one etcd member container started by Run.
type Container struct {
	*docker.Container
	settings options
}

type options struct {
	cfg            MemberConfig
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

// WithMemberConfig sets the member's whole command line (see MemberConfig).
func WithMemberConfig(c MemberConfig) Option {
	return func(o *options) error {
		if err := c.Check(); err != nil {
			return err
		}
		o.cfg = c.withDefaults()
		return nil
	}
}

// WithTimings sets --heartbeat-interval and --election-timeout in ms.
func WithTimings(heartbeatMS, electionMS int) Option {
	return func(o *options) error {
		o.cfg.HeartbeatMS, o.cfg.ElectionMS = heartbeatMS, electionMS
		return o.cfg.Check()
	}
}

// WithExtraArgs adds etcd flags after the others.
func WithExtraArgs(args ...string) Option {
	return func(o *options) error {
		o.cfg.ExtraArgs = append(o.cfg.ExtraArgs, args...)
		return nil
	}
}

// WithStartupTimeout bounds the wait for the member to answer (default
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

// Run starts one etcd member container from img and waits until it
// answers: a member of a larger cluster (InitialCluster names more than
// one) only needs to answer on its metrics port (WaitForAnswer; it cannot
// serve before a quorum is up), a single-member cluster must serve
// (WaitForHealthy). Without options it is a single-member cluster "etcd1"
// labelled docker.LabelManaged. The container's hostname is the member's
// name, so it can resolve its own peer URL on any network; add WithRunID,
// WithMemberConfig, network options etc. for a cluster member
// (StartCluster does). On failure the container, if one was created, is
// returned with the error: terminate it.
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	settings := options{cfg: MemberConfig{}.withDefaults(), startupTimeout: DefaultStartupTimeout}
	for _, opt := range opts {
		if o, ok := opt.(Option); ok {
			if err := o(&settings); err != nil {
				return nil, fmt.Errorf("run etcd: %w", err)
			}
		}
	}
	if !settings.pull {
		if err := docker.CheckImage(ctx, img); err != nil {
			return nil, fmt.Errorf("run etcd: %w", err)
		}
	}
	cfg := settings.cfg
	var ready wait.Strategy = WaitForAnswer().WithStartupTimeout(settings.startupTimeout)
	if cfg.Members() == 1 {
		ready = WaitForHealthy().WithStartupTimeout(settings.startupTimeout)
	}
	moduleOpts := []testcontainers.ContainerCustomizer{
		docker.PublishPorts(ClientPort, MetricsPort),
		testcontainers.WithEntrypoint(Binary),
		testcontainers.WithCmd(cfg.Args()...),
		testcontainers.WithConfigModifier(func(c *container.Config) { c.Hostname = cfg.Name }),
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
		return c, fmt.Errorf("run etcd: %w", err)
	}
	return c, nil
}

// ---------------------------------------------------------------------------
// Container helpers.

// Config is the member configuration the container was started with.
func (c *Container) Config() MemberConfig { return c.settings.cfg }

// ClientAddress returns "127.0.0.1:<host port>" of the client port.
func (c *Container) ClientAddress(ctx context.Context) (string, error) {
	return docker.HostAddress(ctx, c, ClientPort)
}

// MetricsAddress returns "127.0.0.1:<host port>" of the metrics port
// (/metrics, /health; served before the member has joined a quorum).
func (c *Container) MetricsAddress(ctx context.Context) (string, error) {
	return docker.HostAddress(ctx, c, MetricsPort)
}

// Health asks GET /health on the client port (deadline from ctx, or
// DefaultProbeTimeout): nil if the member serves (it has a leader and a
// read goes through), else why not.
func (c *Container) Health(ctx context.Context) error {
	addr, err := c.ClientAddress(ctx)
	if err != nil {
		return err
	}
	return httpHealth(ctx, addr)
}

// Status asks the member for its status through the Go client (member ID,
// leader ID, raft term and index, database size).
func (c *Container) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	addr, err := c.ClientAddress(ctx)
	if err != nil {
		return nil, err
	}
	cli, err := NewClient(addr)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	return callStatus(ctx, cli, addr)
}

// NewClient returns an etcd client for the endpoints ("127.0.0.1:port"),
// with a 5 s dial timeout and no logging. Close it.
func NewClient(endpoints ...string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("new etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}

// callStatus calls Status on the endpoint with a deadline of at most
// DefaultProbeTimeout.
func callStatus(ctx context.Context, cli *clientv3.Client, endpoint string) (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", endpoint, err)
	}
	return st, nil
}

// httpHealth asks GET http://addr/health.
func httpHealth(ctx context.Context, addr string) error {
	code, body, err := httpGet(ctx, addr, "/health")
	if err != nil {
		return err
	}
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("health of %s: HTTP %d %q", addr, code, truncate(string(body), 120))
	}
	if code != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("health of %s: HTTP %d health %s %s", addr, code, h.Health, h.Reason)
	}
	return nil
}

// probeClient makes one request per connection: a paused or restarted
// container must not hold a pooled connection.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// httpGet GETs http://addr+path with the deadline of ctx, or
// DefaultProbeTimeout when ctx has none.
func httpGet(ctx context.Context, addr, path string) (int, []byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultProbeTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("GET %s%s: %w", addr, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("GET %s%s: %w", addr, path, err)
	}
	return resp.StatusCode, body, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
