package dockerzk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/docker"
)

// DefaultStartTimeout bounds StartEnsemble when its context has no deadline.
const DefaultStartTimeout = 3 * time.Minute

// MaxServers is the largest ensemble StartEnsemble accepts.
const MaxServers = 7

// MaxObservers is the most observers StartEnsemble adds to the voting
// members, as harness/zkensemble (each is one more JVM on the machine).
const MaxObservers = 5

// EnsembleOptions configures StartEnsemble. The zero value gives 3 members
// with ZooKeeper's usual timing (tickTime 2000, initLimit 10, syncLimit 5),
// -Xmx256m, from the first image FindImage finds.
type EnsembleOptions struct {
	Servers int // 1..7, default 3; 1 runs a standalone server
	// Observers are non-voting members (peerType=observer) after the
	// voting ones: zk<Servers+1>...; 0..MaxObservers, only with Servers >= 2.
	Observers      int
	Image          string // default: FindImage
	TickMS         int    // ZOO_TICK_TIME, default 2000
	InitLimit      int    // ZOO_INIT_LIMIT in ticks, default 10
	SyncLimit      int    // ZOO_SYNC_LIMIT in ticks, default 5
	HeapMB         int    // JVMFLAGS -Xmx, default 256
	MaxClientCnxns int    // ZOO_MAX_CLIENT_CNXNS per client IP (0 = unlimited)

	// RunID names the run: containers are "<RunID>-zkN", and everything
	// is labelled docker.LabelRun=RunID (see docker.Sweep). Default:
	// "chaoslab-" and 8 random hex digits.
	RunID string
	// Network, when set, is a network of the caller's (a placement's site)
	// that the containers join instead of one of their own; Close leaves it.
	Network *testcontainers.DockerNetwork
	// LogDir receives zkN.log, each member's output (appended over
	// restarts and replacements). Default: a new directory under
	// os.TempDir(). Nothing is removed by Close.
	LogDir string
	Logger *slog.Logger // default slog.Default()

	// JVMFlags are added to every member's JVMFLAGS after -Xmx.
	JVMFlags []string
	// StartupTimeout bounds the wait for one container to answer ruok
	// (default DefaultStartupTimeout).
	StartupTimeout time.Duration
	// Customizers are applied to every member's container after this
	// package's own options (e.g. WithMemoryLimit, WithCPULimit).
	Customizers []testcontainers.ContainerCustomizer
}

func (o EnsembleOptions) withDefaults(ctx context.Context) (EnsembleOptions, error) {
	if o.Servers == 0 {
		o.Servers = 3
	}
	if o.Servers < 1 || o.Servers > MaxServers {
		return o, fmt.Errorf("check options: Servers=%d, want 1..%d", o.Servers, MaxServers)
	}
	if o.Observers < 0 || o.Observers > MaxObservers {
		return o, fmt.Errorf("check options: Observers=%d, want 0..%d", o.Observers, MaxObservers)
	}
	if o.Observers > 0 && o.Servers < 2 {
		return o, fmt.Errorf("check options: Observers=%d with Servers=%d: observers need at least 2 voting members (one server runs standalone)", o.Observers, o.Servers)
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"TickMS", &o.TickMS, 2000}, {"InitLimit", &o.InitLimit, 10}, {"SyncLimit", &o.SyncLimit, 5}, {"HeapMB", &o.HeapMB, 256}} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 0 {
			return o, fmt.Errorf("check options: %s=%d is negative", f.name, *f.v)
		}
	}
	if o.MaxClientCnxns < 0 {
		return o, fmt.Errorf("check options: MaxClientCnxns=%d is negative", o.MaxClientCnxns)
	}
	if o.RunID == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.RunID = "chaoslab-" + hex.EncodeToString(b)
	}
	if err := docker.CheckRunID(o.RunID); err != nil {
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

// Ensemble is a running set of ZooKeeper containers started by StartEnsemble.
type Ensemble struct {
	opts    EnsembleOptions
	log     *slog.Logger
	net     *testcontainers.DockerNetwork
	members []*Member // members[i].ID() == i+1

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// StartEnsemble creates a labelled bridge network for the run and one
// container per member on it (alias zkN, name "<RunID>-zkN", client port
// published on 127.0.0.1), follows each member's output into LogDir/zkN.log,
// and waits until every member serves and one stable leader exists, all
// others following. The wait ends with ctx (DefaultStartTimeout if ctx has
// no deadline). On failure everything created is removed and the error
// carries the tail of the failing members' logs.
func StartEnsemble(ctx context.Context, o EnsembleOptions) (*Ensemble, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if err := docker.Available(ctx); err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	o, err := o.withDefaults(ctx)
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	if ok, err := docker.ImageExists(ctx, o.Image); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("image %s is not present (no registry can be reached; build it with `chaoslab images build`): %w", o.Image, docker.ErrNoImage)
		}
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	if o.LogDir, err = docker.LogDir(o.LogDir, "dockerzk-"+o.RunID+"-"); err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	began := time.Now()
	e := &Ensemble{opts: o, log: o.Logger}
	for id := 1; id <= o.members(); id++ {
		e.members = append(e.members, newMember(e, id))
	}
	e.net = o.Network
	if e.net == nil {
		if e.net, err = docker.NewNetwork(ctx, o.RunID, Component); err != nil {
			return nil, fmt.Errorf("start ensemble: %w", err)
		}
	}
	fail := func(err error, bad []*Member) (*Ensemble, error) {
		return nil, fmt.Errorf("start ensemble: %w", docker.FailStart(err, bad, func(m *Member) string { return m.logTail(25) }, e.Close))
	}
	e.log.Info("dockerzk: starting", "run", o.RunID, "members", o.Servers, "observers", o.Observers, "image", o.Image, "network", e.net.Name, "logs", o.LogDir)

	// Create the members at the same time: a member only serves once a
	// quorum is up, but each answers ruok as soon as it listens.
	if bad, err := docker.CreateAll(ctx, e.members, (*Member).create); err != nil {
		return fail(err, bad)
	}
	if err := e.waitAllServing(ctx); err != nil {
		return fail(err, nil)
	}
	if bad, err := e.waitHealthy(ctx); err != nil {
		return fail(err, bad)
	}
	e.log.Info("dockerzk: healthy", "run", o.RunID, "members", o.Servers, "observers", o.Observers, "servers", strings.Join(e.Servers(), ","), "took", time.Since(began).Round(time.Millisecond))
	return e, nil
}

// members is the number of containers: voting members and observers.
func (o EnsembleOptions) members() int { return o.Servers + o.Observers }

// memberOpts are the container options of member id.
func (e *Ensemble) memberOpts(id int) []testcontainers.ContainerCustomizer {
	o := e.opts
	servers := ServersWithObservers(o.Servers, o.Observers)
	cfg := ServerConfig{
		ID: id, Servers: servers, TickMS: o.TickMS, InitLimit: o.InitLimit, SyncLimit: o.SyncLimit,
		MaxClientCnxns: o.MaxClientCnxns, HeapMB: o.HeapMB, JVMFlags: o.JVMFlags, Observer: id > o.Servers,
	}
	opts := []testcontainers.ContainerCustomizer{
		WithHeapMB(o.HeapMB),
		WithJVMFlags(o.JVMFlags...),
		WithStartupTimeout(o.StartupTimeout),
		testcontainers.WithEnv(cfg.Env()),
		WithRunID(o.RunID),
		testcontainers.WithLabels(map[string]string{docker.LabelComponent: Component, docker.LabelMember: MemberName(id)}),
		testcontainers.WithName(ContainerName(o.RunID, id)),
		network.WithNetwork([]string{MemberName(id)}, e.net),
		testcontainers.WithLogger(docker.SlogPrintf(e.log)),
	}
	return append(opts, o.Customizers...)
}

// waitAllServing waits until every member serves; the first failure (a
// container stopping, or ctx ending) cancels the rest.
func (e *Ensemble) waitAllServing(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, m := range e.members {
		wg.Go(func() {
			if err := m.waitServing(ctx); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	return first
}

// Members returns the members; Members()[i].ID() == i+1.
func (e *Ensemble) Members() []*Member { return append([]*Member(nil), e.members...) }

// Member returns member id (1-based), or nil.
func (e *Ensemble) Member(id int) *Member {
	if id < 1 || id > len(e.members) {
		return nil
	}
	return e.members[id-1]
}

// Servers returns the members' client addresses ("127.0.0.1:port"), as of
// now: a restart, replacement or reconnection may change a member's port.
func (e *Ensemble) Servers() []string {
	out := make([]string, len(e.members))
	for i, m := range e.members {
		out[i] = m.ClientAddr()
	}
	return out
}

// ConnectString returns the client addresses joined by commas.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Servers(), ",") }

// RunID is the run the ensemble's containers and network are labelled with.
func (e *Ensemble) RunID() string { return e.opts.RunID }

// Network is the name of the run's bridge network.
func (e *Ensemble) Network() string { return e.net.Name }

// LogDir is the folder of the members' logs.
func (e *Ensemble) LogDir() string { return e.opts.LogDir }

// Options returns the options the ensemble runs with, defaults filled in.
func (e *Ensemble) Options() EnsembleOptions { return e.opts }

// closeTimeout bounds Close.
const closeTimeout = 2 * time.Minute

// Close removes every member's container (thawed first if paused; SIGKILL,
// with its anonymous volumes) and the network, waits until the log copies
// have ended and joins the errors; it always tries everything. The log
// folder is kept. Close is idempotent and stops Restart and Replace from
// starting anything again.
func (e *Ensemble) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := docker.RemoveAll(ctx, e.ownNet(), e.members, (*Member).remove); err != nil {
			e.closeErr = fmt.Errorf("close ensemble: %w", err)
		}
		e.log.Info("dockerzk: closed", "run", e.opts.RunID, "err", e.closeErr)
	})
	return e.closeErr
}

// ownNet is the network Close removes: none when it is the caller's.
func (e *Ensemble) ownNet() *testcontainers.DockerNetwork {
	if e.opts.Network != nil {
		return nil
	}
	return e.net
}
