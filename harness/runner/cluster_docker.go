package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/dockerzk"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/limits"
)

// dockerBackend runs the servers, and the clients, as containers on a
// private network of the run.
type dockerBackend struct {
	zkImage     string
	clientImage string
}

func (dockerBackend) Name() string { return "docker" }

func (dockerBackend) probe() faults.Target { return &dockerzk.Member{} }

func (b dockerBackend) Prepare(ctx context.Context, log *slog.Logger) error {
	if err := docker.Available(ctx); err != nil {
		return err
	}
	// Whatever a crashed earlier run left behind goes first; runs of live
	// processes are not touched.
	if swept, err := docker.SweepStale(ctx); err != nil {
		log.Warn("sweep leftovers of earlier runs", "err", err)
	} else if !swept.Empty() {
		log.Info("removed leftovers of earlier runs", "swept", swept.String())
	}
	for _, img := range []string{b.zkImage, b.clientImage} {
		ok, err := docker.ImageExists(ctx, img)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("prepare docker backend: image %s is missing: pull it, or build the local equivalents with `chaoslab images build`", img)
		}
	}
	return nil
}

func (b dockerBackend) StartZooKeeper(ctx context.Context, spec clusterSpec) (zkCluster, error) {
	t := spec.Topo
	ens, err := dockerzk.StartEnsemble(ctx, dockerzk.EnsembleOptions{
		Servers: t.Servers, Image: b.zkImage, TickMS: t.TickMS, InitLimit: t.InitLimit, SyncLimit: t.SyncLimit,
		HeapMB: t.HeapMB, MaxClientCnxns: t.MaxClientCnxns, RunID: spec.RunID,
		LogDir: filepath.Join(spec.Dir, "logs"), Logger: spec.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	return &dockerZK{ens: ens, runID: spec.RunID, log: spec.Logger}, nil
}

// dockerZK adapts dockerzk to zkCluster; CPU limits are the containers'.
type dockerZK struct {
	ens   *dockerzk.Ensemble
	runID string
	log   *slog.Logger
	cores float64
}

func (c *dockerZK) Servers() []string { return c.ens.Servers() }

func (c *dockerZK) Members() []zkMember {
	ms := c.ens.Members()
	out := make([]zkMember, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func (c *dockerZK) Leader(ctx context.Context) (zkMember, error) {
	l, err := c.ens.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (c *dockerZK) Followers(ctx context.Context) ([]zkMember, error) {
	fs, err := c.ens.Followers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]zkMember, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out, nil
}

func (c *dockerZK) WaitHealthy(ctx context.Context) error { return c.ens.WaitHealthy(ctx) }

func (c *dockerZK) LimitCPU(cores float64) error {
	c.cores = cores
	for _, m := range c.ens.Members() {
		if err := m.LimitCPU(cores); err != nil {
			return fmt.Errorf("limit server cpu: %s: %w", m.Name(), err)
		}
	}
	return nil
}

// AfterFault re-applies the CPU limit: a replaced member is a new container.
func (c *dockerZK) AfterFault() {
	if c.cores <= 0 {
		return
	}
	for _, m := range c.ens.Members() {
		if cur, err := m.CPULimit(); err == nil && cur != c.cores {
			_ = m.LimitCPU(c.cores)
		}
	}
}

func (c *dockerZK) Close() error {
	err := c.ens.Close()
	if _, serr := docker.Sweep(context.Background(), c.runID); serr != nil && err == nil {
		err = serr
	}
	return err
}

// clientSetup returns how the clients of a variant run and the server
// addresses they use: local processes reach the servers on loopback,
// containers by name on the run's network.
func clientSetup(be backend, ens zkCluster, o Options, mgr *limits.Manager, runID string, log *slog.Logger) (launcher, []string) {
	if dz, ok := ens.(*dockerZK); ok {
		var names []string
		for _, m := range dz.ens.Members() {
			names = append(names, m.Name()+":2181")
		}
		img := be.(dockerBackend).clientImage
		return containerLauncher{image: img, network: dz.ens.Network(), runID: runID, textMB: imageMB(img) + textSlackMB,
			lockText: strings.HasPrefix(img, "chaoslab/chaoslab:")}, names
	}
	return processLauncher{bin: o.ClientBinary, args: o.ClientArgs, mgr: mgr, log: log}, ens.Servers()
}

// imageMB is the size of an image in MiB, rounded up (0 when unknown): for
// the chaoslab image, FROM scratch with one static binary, the binary.
// A client container starts with its memory limit plus that much (plus
// textSlackMB) and is brought down to its memory limit plus the page cache
// charged to it once it runs (containerLauncher.settle).
// textSlackMB is room at the start for file pages other than the
// executable's (none in the chaoslab image; a bring-your-own image may
// have libraries).
const textSlackMB = 8

func imageMB(ref string) int {
	out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Size}}", ref).Output()
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0
	}
	return int((n + (1 << 20) - 1) >> 20)
}
