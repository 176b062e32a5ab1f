// Package dockerzk runs ZooKeeper servers in Docker containers, in the
// style of a testcontainers-go module: Run starts one server container
// (functional options, a Container type with helper methods), and
// StartEnsemble starts an ensemble of N members on a private bridge network
// of the run, with the same health rules as harness/zkensemble (exactly one
// stable leader, all others following) and container faults: docker
// pause/unpause, SIGKILL, restart, replacement by a fresh container, CPU,
// memory and pids limits changed live, and disconnection from the network.
//
// Images: the official zookeeper image's environment variables (ZOO_MY_ID,
// ZOO_SERVERS, ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT,
// ZOO_4LW_COMMANDS_WHITELIST, ZOO_MAX_CLIENT_CNXNS, JVMFLAGS) configure the
// server, so zookeeper:3.8 and chaoslab's own chaoslab/zookeeper:3.8.0-deb12
// both work. Nothing is pulled unless asked (no registry is reachable on
// chaoslab's machines): see FindImage.
//
// Only the client port 2181 is published, on 127.0.0.1 with a host port the
// engine picks; clients and four-letter words use it. Importing this package
// imports harness/docker, which disables testcontainers-go's reaper (Ryuk):
// Close and docker.Sweep clean up instead.
package dockerzk

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// Images.
const (
	// DefaultImage is what `chaoslab images build` produces: a Debian
	// rootfs with ZooKeeper 3.8.0 and an entrypoint honouring the official
	// image's variables.
	DefaultImage = "chaoslab/zookeeper:3.8.0-deb12"
	// OfficialImage is the official image, for machines that have it.
	OfficialImage = "zookeeper:3.8"
	// ImageEnv names an image to prefer over the others.
	ImageEnv = "CHAOSLAB_ZOOKEEPER_IMAGE"
)

// ClientPort is the client port inside the container.
const ClientPort = "2181/tcp"

// loopback is the only host address ports are published on and dialled.
const loopback = docker.Loopback

// Component is the value of docker.LabelComponent on the containers.
const Component = "zookeeper"

// DefaultStartupTimeout bounds the wait for one container to answer ruok.
const DefaultStartupTimeout = 90 * time.Second

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
		return "", fmt.Errorf("find zookeeper image: %w", err)
	}
	return img, nil
}

// ---------------------------------------------------------------------------
// Environment rendering (pure, tested without Docker).

// MemberName is the network alias and short name of server id: "zk<id>".
func MemberName(id int) string { return "zk" + strconv.Itoa(id) }

// ContainerName is the container name of server id in run runID.
func ContainerName(runID string, id int) string { return runID + "-" + MemberName(id) }

// ServersValue renders ZOO_SERVERS for an ensemble of n voting members
// reachable by their aliases: "server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 ...".
func ServersValue(n int) string { return ServersWithObservers(n, 0) }

// ServersWithObservers renders ZOO_SERVERS for n voting members followed
// by observers non-voting ones, whose lines end in ":observer" (as
// harness/zkensemble writes them): "... server.4=zk4:2888:3888:observer;2181".
func ServersWithObservers(n, observers int) string {
	parts := make([]string, n+observers)
	for i := range n + observers {
		kind := ""
		if i >= n {
			kind = ":observer"
		}
		parts[i] = fmt.Sprintf("server.%d=%s:2888:3888%s;2181", i+1, MemberName(i+1), kind)
	}
	return strings.Join(parts, " ")
}

// ServerConfig is what goes into one server's environment.
type ServerConfig struct {
	ID             int    // myid
	Servers        string // ZOO_SERVERS; "" leaves the image's default (standalone)
	TickMS         int
	InitLimit      int
	SyncLimit      int
	MaxClientCnxns int // 0 = unlimited
	HeapMB         int
	JVMFlags       []string // after -Xmx
	// Observer makes this server a non-voting member: peerType=observer in
	// its zoo.cfg (ZOO_CFG_EXTRA); its line in Servers ends in ":observer".
	Observer bool
}

// Env renders the configuration as the official image's variables.
func (c ServerConfig) Env() map[string]string {
	env := map[string]string{
		"ZOO_MY_ID":                  strconv.Itoa(c.ID),
		"ZOO_TICK_TIME":              strconv.Itoa(c.TickMS),
		"ZOO_INIT_LIMIT":             strconv.Itoa(c.InitLimit),
		"ZOO_SYNC_LIMIT":             strconv.Itoa(c.SyncLimit),
		"ZOO_MAX_CLIENT_CNXNS":       strconv.Itoa(c.MaxClientCnxns),
		"ZOO_4LW_COMMANDS_WHITELIST": "*",
		"ZOO_STANDALONE_ENABLED":     "true",
		"JVMFLAGS":                   jvmFlags(c.HeapMB, c.JVMFlags),
		// zkServer.sh in the official image adds -Xmx$ZK_SERVER_HEAP after
		// JVMFLAGS; keep the two the same.
		"ZK_SERVER_HEAP": strconv.Itoa(c.HeapMB),
	}
	if c.Servers != "" {
		env["ZOO_SERVERS"] = c.Servers
	}
	if c.Observer {
		env["ZOO_CFG_EXTRA"] = "peerType=observer"
	}
	return env
}

func jvmFlags(heapMB int, extra []string) string {
	return strings.TrimSpace("-Xmx" + strconv.Itoa(heapMB) + "m " + strings.Join(extra, " "))
}

// EnvList renders env as sorted KEY=VALUE strings (for logs and tests).
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------
// The module: Run and its options.

// Container is one ZooKeeper server container started by Run.
type Container struct {
	*docker.Container
	settings options
}

type options struct {
	heapMB         int
	jvmFlags       []string
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

// WithHeapMB sets the JVM's -Xmx (default 256).
func WithHeapMB(mb int) Option {
	return func(o *options) error {
		if mb <= 0 {
			return fmt.Errorf("heap %d MB: must be positive", mb)
		}
		o.heapMB = mb
		return nil
	}
}

// WithJVMFlags adds JVM flags after -Xmx (e.g. "-Xms256m", "-XX:+AlwaysPreTouch").
func WithJVMFlags(flags ...string) Option {
	return func(o *options) error {
		o.jvmFlags = append(o.jvmFlags, flags...)
		return nil
	}
}

// WithStartupTimeout bounds the wait for the server to answer ruok
// (default DefaultStartupTimeout).
func WithStartupTimeout(d time.Duration) Option {
	return func(o *options) error {
		o.startupTimeout = d
		return nil
	}
}

// WithPull lets testcontainers pull the image if it is not present. Without
// it Run fails at once on a missing image (chaoslab's machines reach no
// registry, and a pull would only time out).
func WithPull() Option {
	return func(o *options) error {
		o.pull = true
		return nil
	}
}

// WithServerID sets ZOO_MY_ID (default 1).
func WithServerID(id int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"ZOO_MY_ID": strconv.Itoa(id)})
}

// WithServers sets ZOO_SERVERS (see ServersValue).
func WithServers(servers string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"ZOO_SERVERS": servers})
}

// WithTickTime sets ZOO_TICK_TIME in milliseconds.
func WithTickTime(ms int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"ZOO_TICK_TIME": strconv.Itoa(ms)})
}

// WithInitLimit sets ZOO_INIT_LIMIT in ticks.
func WithInitLimit(ticks int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"ZOO_INIT_LIMIT": strconv.Itoa(ticks)})
}

// WithSyncLimit sets ZOO_SYNC_LIMIT in ticks.
func WithSyncLimit(ticks int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"ZOO_SYNC_LIMIT": strconv.Itoa(ticks)})
}

// WithMaxClientCnxns sets ZOO_MAX_CLIENT_CNXNS (0 = unlimited).
func WithMaxClientCnxns(n int) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"ZOO_MAX_CLIENT_CNXNS": strconv.Itoa(n)})
}

// WithRunID labels the container as part of run runID (docker.LabelRun).
func WithRunID(runID string) testcontainers.CustomizeRequestOption {
	return docker.WithRunID(runID)
}

// WithMemoryLimit sets the container's memory limit (and memory+swap to
// the same, so no swap) in bytes.
func WithMemoryLimit(bytes int64) testcontainers.CustomizeRequestOption {
	return docker.WithMemoryLimit(bytes)
}

// WithCPULimit limits the container to cores CPUs (docker run --cpus).
func WithCPULimit(cores float64) testcontainers.CustomizeRequestOption {
	return docker.WithCPULimit(cores)
}

// WithPidsLimit limits the number of tasks in the container.
func WithPidsLimit(n int64) testcontainers.CustomizeRequestOption {
	return docker.WithPidsLimit(n)
}

// publishClientPort binds the client port to 127.0.0.1 only, on a port the
// engine picks.
func publishClientPort() testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithExposedPorts(ClientPort)(req); err != nil {
			return err
		}
		return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			p := mobynet.MustParsePort(ClientPort)
			if hc.PortBindings == nil {
				hc.PortBindings = mobynet.PortMap{}
			}
			hc.PortBindings[p] = []mobynet.PortBinding{{HostIP: netip.MustParseAddr(loopback), HostPort: ""}}
		})(req)
	}
}

// Run starts one ZooKeeper server container from img and waits until it
// answers ruok on its published client port. Without options it is a
// standalone server (ZOO_MY_ID 1, tickTime 2000, -Xmx256m) labelled
// docker.LabelManaged; add WithRunID, WithServerID, WithServers, network
// options etc. for an ensemble member (StartEnsemble does). On failure the
// container, if one was created, is returned with the error: terminate it.
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	settings := options{heapMB: 256, startupTimeout: DefaultStartupTimeout}
	for _, opt := range opts {
		if o, ok := opt.(Option); ok {
			if err := o(&settings); err != nil {
				return nil, fmt.Errorf("run zookeeper: %w", err)
			}
		}
	}
	if !settings.pull {
		ok, err := docker.ImageExists(ctx, img)
		if err != nil {
			return nil, fmt.Errorf("run zookeeper: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("run zookeeper: image %s is not present (no registry can be reached; build it with `chaoslab images build`, or pass WithPull): %w", img, docker.ErrNoImage)
		}
	}
	def := ServerConfig{ID: 1, TickMS: 2000, InitLimit: 10, SyncLimit: 5, HeapMB: settings.heapMB, JVMFlags: settings.jvmFlags}
	moduleOpts := []testcontainers.ContainerCustomizer{
		publishClientPort(),
		testcontainers.WithEnv(def.Env()),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(""), map[string]string{docker.LabelComponent: Component})),
		testcontainers.WithWaitStrategyAndDeadline(settings.startupTimeout, WaitForRuok().WithStartupTimeout(settings.startupTimeout)),
	}
	moduleOpts = append(moduleOpts, opts...)

	ctr, err := testcontainers.Run(ctx, img, moduleOpts...)
	var c *Container
	if ctr != nil {
		c = &Container{Container: &docker.Container{Container: ctr}, settings: settings}
	}
	if err != nil {
		return c, fmt.Errorf("run zookeeper: %w", err)
	}
	return c, nil
}

// ---------------------------------------------------------------------------
// Container helpers.

// ClientAddress returns "127.0.0.1:<host port>" of the client port. The
// host port changes when the container is started again or reconnected.
func (c *Container) ClientAddress(ctx context.Context) (string, error) {
	p, err := c.MappedPort(ctx, ClientPort)
	if err != nil {
		return "", fmt.Errorf("find client port: %w", err)
	}
	return net.JoinHostPort(loopback, p.Port()), nil
}

// FourLetter sends a four-letter word to the server and returns the answer
// (deadline from ctx, or DefaultProbeTimeout).
func (c *Container) FourLetter(ctx context.Context, cmd string) (string, error) {
	addr, err := c.ClientAddress(ctx)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", cmd, err)
	}
	out, err := zkcheck.FourLetter(ctx, addr, cmd)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", cmd, err)
	}
	return out, nil
}

// Mntr returns the server's mntr answer as a map; a server that answers
// but does not serve gives an error wrapping ErrNotServing.
func (c *Container) Mntr(ctx context.Context) (map[string]string, error) {
	out, err := c.FourLetter(ctx, "mntr")
	if err != nil {
		return nil, fmt.Errorf("mntr: %w", err)
	}
	kv, err := zkcheck.ParseMntr(out)
	if err != nil {
		return nil, fmt.Errorf("mntr: %w", err)
	}
	return kv, nil
}

// State is a container's state as the engine reports it (docker.State).
type State = docker.State

// Connect attaches the container to the network with the aliases.
func (c *Container) Connect(ctx context.Context, network string, aliases ...string) error {
	return c.Container.Connect(ctx, network, netip.Addr{}, aliases...)
}
