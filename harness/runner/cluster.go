package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/dockeretcd"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/zkensemble"
	"github.com/chaoslab/chaoslab/scenarios"
)

// zkMember is what the runner needs of one ZooKeeper server, whichever
// backend runs it (a local process, a container).
type zkMember interface {
	faults.Target
	Running() bool
	Paused() bool
	Mntr(ctx context.Context) (map[string]string, error)
	Version(ctx context.Context) (string, error)
}

// zkCluster is a running ZooKeeper ensemble of one backend.
type zkCluster interface {
	// Servers are the client addresses, reachable from this machine.
	Servers() []string
	Members() []zkMember
	Leader(ctx context.Context) (zkMember, error)
	Followers(ctx context.Context) ([]zkMember, error)
	WaitHealthy(ctx context.Context) error
	// LimitCPU holds every server to this many cores from now on,
	// restarted or replaced servers included.
	LimitCPU(cores float64) error
	// AfterFault lets the backend restore what a fault may have undone
	// (e.g. a restarted process is outside its CPU limit).
	AfterFault()
	Close() error
}

// clusterSpec is everything a backend needs to start an ensemble.
type clusterSpec struct {
	Topo   *scenarios.ZooKeeperTopology
	Dir    string // the variant's folder; logs go to Dir/logs
	RunID  string
	Limits *limits.Manager
	Logger *slog.Logger
}

// backend starts ensembles of one kind.
type backend interface {
	Name() string
	// Prepare installs or checks what the backend needs (once per run).
	Prepare(ctx context.Context, log *slog.Logger) error
	StartZooKeeper(ctx context.Context, spec clusterSpec) (zkCluster, error)
	// probe is a member of this backend's kind, for asking faults whether
	// they can act on it before anything starts.
	probe() faults.Target
}

// preflight refuses a scenario whose faults this backend cannot inject.
func preflight(be backend, s *scenarios.Scenario) error {
	for i, step := range s.Timeline.Faults {
		f, err := faults.Get(step.Fault)
		if err != nil {
			return err
		}
		if err := f.Available(be.probe()); err != nil {
			return fmt.Errorf("check faults: timeline.faults[%d] %s on the %s backend: %w", i, step.Fault, be.Name(), err)
		}
	}
	return nil
}

// localBackend runs servers as processes on this machine.
type localBackend struct{}

func (localBackend) Name() string { return "local" }

func (localBackend) probe() faults.Target {
	return localMember{&zkensemble.Member{Name: "probe"}}
}

func (localBackend) Prepare(ctx context.Context, log *slog.Logger) error {
	return zkensemble.EnsureInstalled(ctx, log)
}

func (localBackend) StartZooKeeper(ctx context.Context, spec clusterSpec) (zkCluster, error) {
	t := spec.Topo
	ens, err := zkensemble.Start(ctx, zkensemble.Options{
		Servers: t.Servers, TickMS: t.TickMS, InitLimit: t.InitLimit, SyncLimit: t.SyncLimit,
		HeapMB: t.HeapMB, MaxClientCnxns: t.MaxClientCnxns, Dir: spec.Dir, Logger: spec.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	return &localZK{ens: ens, mgr: spec.Limits}, nil
}

// localZK adapts zkensemble to zkCluster; CPU limits are cgroups.
type localZK struct {
	ens   *zkensemble.Ensemble
	mgr   *limits.Manager
	cores float64
}

type localMember struct{ *zkensemble.Member }

func (m localMember) Name() string { return m.Member.Name }

func (c *localZK) Servers() []string { return c.ens.Servers() }

func (c *localZK) Members() []zkMember {
	out := make([]zkMember, len(c.ens.Members))
	for i, m := range c.ens.Members {
		out[i] = localMember{m}
	}
	return out
}

func (c *localZK) Leader(ctx context.Context) (zkMember, error) {
	l, err := c.ens.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return localMember{l}, nil
}

func (c *localZK) Followers(ctx context.Context) ([]zkMember, error) {
	fs, err := c.ens.Followers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]zkMember, len(fs))
	for i, f := range fs {
		out[i] = localMember{f}
	}
	return out, nil
}

func (c *localZK) WaitHealthy(ctx context.Context) error { return c.ens.WaitHealthy(ctx) }

func (c *localZK) LimitCPU(cores float64) error {
	c.cores = cores
	for _, m := range c.ens.Members {
		g, err := c.mgr.NewGroup(m.Name, limits.Limits{CPUCores: cores})
		if err != nil {
			return fmt.Errorf("limit server cpu: %w", err)
		}
		if err := g.Add(m.PID()); err != nil {
			return fmt.Errorf("limit server cpu: %s: %w", m.Name, err)
		}
	}
	return nil
}

// AfterFault puts restarted members (new PIDs) back in their CPU group.
func (c *localZK) AfterFault() {
	if c.cores <= 0 {
		return
	}
	for _, m := range c.ens.Members {
		if g := c.mgr.Group(m.Name); g != nil && m.PID() > 0 && !g.Contains(m.PID()) {
			_ = g.Add(m.PID())
		}
	}
}

func (c *localZK) Close() error { return c.ens.Close() }

// chooseBackend resolves local, docker or auto; why says how auto chose.
func chooseBackend(ctx context.Context, name string, s *scenarios.Scenario, o Options) (backend, string, error) {
	switch name {
	case "", "local":
		return localBackend{}, "", nil
	case "docker", "auto":
		if err := docker.Available(ctx); err != nil {
			if name == "auto" {
				return localBackend{}, "auto: no Docker engine answers (" + err.Error() + "), using local processes", nil
			}
			return nil, "", fmt.Errorf("choose backend: %w", err)
		}
		zk, zkWhy, err := resolveImage(ctx, "zookeeper", s, o)
		if err == nil {
			var cl, clWhy string
			cl, clWhy, err = resolveImage(ctx, "client", s, o)
			if err == nil {
				why := "images: zookeeper " + zk + " (" + zkWhy + "), clients " + cl + " (" + clWhy + ")"
				if name == "auto" {
					why = "auto: a Docker engine answers; " + why
				}
				return dockerBackend{zkImage: zk, clientImage: cl}, why, nil
			}
		}
		if name == "auto" {
			return localBackend{}, "auto: a Docker engine answers but " + err.Error() + "; using local processes", nil
		}
		return nil, "", fmt.Errorf("choose backend: %w", err)
	}
	return nil, "", fmt.Errorf("run scenario: unknown backend %q (want local, docker or auto)", name)
}

// Image defaults per system: the official public image first, then the
// equivalent `chaoslab images build` makes without a registry.
var imageDefaults = map[string][]string{
	"zookeeper": {"zookeeper:3.8", images.ZooKeeperRef},
	"client":    {images.ChaoslabRepo + ":" + images.DefaultChaoslabTag},
	"etcd":      {dockeretcd.OfficialImage, dockeretcd.DefaultImage},
}

// resolveImage picks the image of a system: --image flag, then the
// CHAOSLAB_<SYSTEM>_IMAGE variable, then the scenario's field, then the
// first default present on this machine.
func resolveImage(ctx context.Context, system string, s *scenarios.Scenario, o Options) (string, string, error) {
	if ref := o.Images[system]; ref != "" {
		return ref, "--image", nil
	}
	env := "CHAOSLAB_" + strings.ToUpper(system) + "_IMAGE"
	if ref := os.Getenv(env); ref != "" {
		return ref, env, nil
	}
	if system == "zookeeper" && s != nil && s.Topology.ZooKeeper != nil && s.Topology.ZooKeeper.Image != "" {
		return s.Topology.ZooKeeper.Image, "scenario topology.zookeeper.image", nil
	}
	for _, ref := range imageDefaults[system] {
		ok, err := docker.ImageExists(ctx, ref)
		if err != nil {
			return "", "", err
		}
		if ok {
			return ref, "default, present here", nil
		}
	}
	return "", "", fmt.Errorf("no %s image here (tried %s; build the local ones with `chaoslab images build`, or name one with --image %s=REF or %s)",
		system, strings.Join(imageDefaults[system], ", "), system, env)
}
