package dockeretcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chaoslab/chaoslab/harness/docker"
)

// DefaultStartTimeout bounds StartCluster when its context has no deadline.
const DefaultStartTimeout = 2 * time.Minute

// MaxMembers is the largest cluster StartCluster accepts.
const MaxMembers = 7

// Options configures StartCluster. The zero value gives 3 members with
// etcd's own timing (heartbeat 100 ms, election timeout 1000 ms) from the
// first image FindImage finds.
type Options struct {
	Members int    // 1..7, default 3
	Image   string // default: FindImage

	// RunID names the run: containers are "<RunID>-etcdN", the cluster
	// token is RunID, and everything is labelled docker.LabelRun=RunID
	// (see docker.Sweep). Default: "chaoslab-" and 8 random hex digits.
	RunID string
	// Network, when set, is a network of the caller's (a placement's site)
	// that the containers join instead of one of their own; Close leaves it.
	Network *testcontainers.DockerNetwork
	// LogDir receives etcdN.log, each member's output (appended over
	// restarts and replacements). Default: a new directory under
	// os.TempDir(). Nothing is removed by Close.
	LogDir string
	Logger *slog.Logger // default slog.Default()

	HeartbeatMS int      // --heartbeat-interval; 0: etcd's default (100)
	ElectionMS  int      // --election-timeout; 0: etcd's default (1000)
	QuotaBytes  int64    // --quota-backend-bytes; 0: etcd's default
	DataDir     string   // --data-dir inside the container, default DefaultDataDir
	ExtraArgs   []string // more etcd flags for every member

	// StartupTimeout bounds the wait for one container to answer (default
	// DefaultStartupTimeout).
	StartupTimeout time.Duration
	// Customizers are applied to every member's container after this
	// package's own options (e.g. WithMemoryLimit, WithCPULimit).
	Customizers []testcontainers.ContainerCustomizer
}

func (o Options) withDefaults(ctx context.Context) (Options, error) {
	if o.Members == 0 {
		o.Members = 3
	}
	if o.Members < 1 || o.Members > MaxMembers {
		return o, fmt.Errorf("check options: Members=%d, want 1..%d", o.Members, MaxMembers)
	}
	if o.RunID == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.RunID = "chaoslab-" + hex.EncodeToString(b)
	}
	if err := docker.CheckRunID(o.RunID); err != nil {
		return o, fmt.Errorf("check options: %w", err)
	}
	if o.DataDir == "" {
		o.DataDir = DefaultDataDir
	}
	if err := o.memberConfig(1).Check(); err != nil {
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

// memberConfig is the command line of member id of a new cluster.
func (o Options) memberConfig(id int) MemberConfig {
	return MemberConfig{
		Name: MemberName(id), InitialCluster: InitialCluster(o.Members), ClusterState: StateNew,
		ClusterToken: o.RunID, DataDir: o.DataDir, HeartbeatMS: o.HeartbeatMS, ElectionMS: o.ElectionMS,
		QuotaBytes: o.QuotaBytes, ExtraArgs: slices.Clone(o.ExtraArgs),
	}.withDefaults()
}

// Cluster is a running set of etcd containers started by StartCluster.
type Cluster struct {
	opts    Options
	log     *slog.Logger
	net     *testcontainers.DockerNetwork
	members []*Member // members[i].ID() == i+1

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// StartCluster creates a labelled bridge network for the run and one
// container per member on it (alias and hostname etcdN, name
// "<RunID>-etcdN", client and metrics ports published on 127.0.0.1),
// follows each member's output into LogDir/etcdN.log, and waits until
// every member answers its Status, one member is leader, all name it and
// all are in the same raft term (WaitHealthy). The wait ends with ctx
// (DefaultStartTimeout if ctx has no deadline). On failure everything
// created is removed and the error carries the tail of the failing
// members' logs.
func StartCluster(ctx context.Context, o Options) (*Cluster, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := docker.Available(ctx); err != nil {
		return nil, fmt.Errorf("start etcd cluster: %w", err)
	}
	o, err := o.withDefaults(ctx)
	if err != nil {
		return nil, fmt.Errorf("start etcd cluster: %w", err)
	}
	if err := docker.CheckImage(ctx, o.Image); err != nil {
		return nil, fmt.Errorf("start etcd cluster: %w", err)
	}
	if o.LogDir, err = docker.LogDir(o.LogDir, "dockeretcd-"+o.RunID+"-"); err != nil {
		return nil, fmt.Errorf("start etcd cluster: %w", err)
	}
	began := time.Now()
	c := &Cluster{opts: o, log: o.Logger}
	for id := 1; id <= o.Members; id++ {
		c.members = append(c.members, newMember(c, id))
	}
	c.net = o.Network
	if c.net == nil {
		if c.net, err = docker.NewNetwork(ctx, o.RunID, Component); err != nil {
			return nil, fmt.Errorf("start etcd cluster: %w", err)
		}
	}
	fail := func(err error, bad []*Member) (*Cluster, error) {
		return nil, fmt.Errorf("start etcd cluster: %w", docker.FailStart(err, bad, func(m *Member) string { return m.logTail(25) }, c.Close))
	}
	c.log.Info("dockeretcd: starting", "run", o.RunID, "members", o.Members, "image", o.Image, "network", c.net.Name, "logs", o.LogDir)

	// Create the members at the same time: none serves before a quorum is
	// up, but each answers on its metrics port as soon as it runs.
	if bad, err := docker.CreateAll(ctx, c.members, (*Member).create); err != nil {
		return fail(err, bad)
	}
	if bad, err := c.waitHealthy(ctx); err != nil {
		return fail(err, bad)
	}
	c.log.Info("dockeretcd: healthy", "run", o.RunID, "members", o.Members, "endpoints", strings.Join(c.Endpoints(), ","), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// memberOpts are the container options of a member with this command line.
func (c *Cluster) memberOpts(name string, id int, cfg MemberConfig) []testcontainers.ContainerCustomizer {
	o := c.opts
	opts := []testcontainers.ContainerCustomizer{
		WithMemberConfig(cfg),
		WithStartupTimeout(o.StartupTimeout),
		WithRunID(o.RunID),
		testcontainers.WithLabels(map[string]string{docker.LabelComponent: Component, docker.LabelMember: name}),
		testcontainers.WithName(ContainerName(o.RunID, id)),
		network.WithNetwork([]string{name}, c.net),
		testcontainers.WithLogger(docker.SlogPrintf(c.log)),
	}
	return append(opts, o.Customizers...)
}

// Members returns the members; Members()[i].ID() == i+1.
func (c *Cluster) Members() []*Member { return append([]*Member(nil), c.members...) }

// Member returns member id (1-based), or nil.
func (c *Cluster) Member(id int) *Member {
	if id < 1 || id > len(c.members) {
		return nil
	}
	return c.members[id-1]
}

// Endpoints returns the members' client addresses ("127.0.0.1:port"), as
// of now: a restart, replacement or reconnection may change a member's
// port.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = m.Endpoint()
	}
	return out
}

// NewClient returns an etcd client for all Endpoints (see NewClient).
// Close it.
func (c *Cluster) NewClient() (*clientv3.Client, error) {
	var eps []string
	for _, e := range c.Endpoints() {
		if e != "" {
			eps = append(eps, e)
		}
	}
	return NewClient(eps...)
}

// RunID is the run the cluster's containers and network are labelled with.
func (c *Cluster) RunID() string { return c.opts.RunID }

// Network is the name of the run's bridge network.
func (c *Cluster) Network() string { return c.net.Name }

// LogDir is the folder of the members' logs.
func (c *Cluster) LogDir() string { return c.opts.LogDir }

// Options returns the options the cluster runs with, defaults filled in.
func (c *Cluster) Options() Options { return c.opts }

// closeTimeout bounds Close.
const closeTimeout = 2 * time.Minute

// Close removes every member's container (thawed first if paused; SIGKILL,
// with its anonymous volumes) and the network, closes the members' clients,
// waits until the log copies have ended and joins the errors; it always
// tries everything. The log folder is kept. Close is idempotent and stops
// Restart and Replace from starting anything again.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := docker.RemoveAll(ctx, c.ownNet(), c.members, func(m *Member, ctx context.Context) error {
			m.closeClient()
			return m.remove(ctx)
		}); err != nil {
			c.closeErr = fmt.Errorf("close etcd cluster: %w", err)
		}
		c.log.Info("dockeretcd: closed", "run", c.opts.RunID, "err", c.closeErr)
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
