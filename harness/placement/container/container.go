// Package container is the container placement: programs run as
// containers (testcontainers-go) on a private network of each variant,
// with their memory, pids and CPU limits as the engine's; an OOM kill is
// the kernel's, read from the container's state, as in Kubernetes. Every
// container and network carries the run's labels and is removed by the
// site's Close, on Ctrl-C, and by the sweep at the start of the next run.
package container

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/infra/imagepick"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Name is the placement's registered name.
const Name = "docker"

func init() { lab.RegisterPlacement(Name, New) }

// Placement runs programs as containers of the local engine.
type Placement struct {
	opts lab.PlacementOptions
	log  *slog.Logger

	images imagepick.Record
}

// New is the container placement of a run.
func New(o lab.PlacementOptions) (lab.Placement, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Placement{opts: o, log: o.Log}, nil
}

func (p *Placement) Name() string { return Name }

// Available asks whether a Docker engine answers.
func (p *Placement) Available(ctx context.Context) error { return docker.Available(ctx) }

// Prepare sweeps what crashed runs left behind and resolves every image
// the run needs, failing when one is missing.
func (p *Placement) Prepare(ctx context.Context, needs []lab.ImageNeed) error {
	if err := docker.Available(ctx); err != nil {
		return err
	}
	if swept, err := docker.SweepStale(ctx); err != nil {
		p.log.Warn("sweep leftovers of earlier runs", "err", err)
	} else if !swept.Empty() {
		p.log.Info("removed leftovers of earlier runs", "swept", swept.String())
	}
	for _, n := range needs {
		if _, err := p.resolve(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// resolve picks an image (imagepick.Choose: --image NAME=REF, then
// CHAOSLAB_<NAME>_IMAGE, then the scenario's, then the first default
// present here), which must be present.
func (p *Placement) resolve(ctx context.Context, n lab.ImageNeed) (string, error) {
	present := func(ref string) (bool, error) { return docker.ImageExists(ctx, ref) }
	ref, why, env, err := imagepick.Choose(n, p.opts.Images, present, "present here")
	if err != nil {
		return "", err
	}
	if ref == "" {
		return "", fmt.Errorf("no %s image here (tried %s; build the local ones with `chaoslab images build`, or name one with --image %s=REF or %s)",
			n.Name, strings.Join(n.Defaults, ", "), n.Name, env)
	}
	if ok, err := docker.ImageExists(ctx, ref); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("image %s is missing: pull it, or build the local equivalents with `chaoslab images build`", ref)
		}
		return "", fmt.Errorf("prepare docker placement: %w", err)
	}
	p.images.Keep(n.Name, ref, why)
	return ref, nil
}

// Image is the image resolved for a name by Prepare ("" when none was).
func (p *Placement) Image(name string) string { return p.images.Image(name) }

func (p *Placement) Why() string { return p.images.Why() }

func (p *Placement) Versions() map[string]string { return p.images.Versions() }

// Open creates the variant's network.
func (p *Placement) Open(ctx context.Context, runID, dir string, log *slog.Logger) (lab.Site, error) {
	net, err := docker.NewNetwork(ctx, runID, "lab")
	if err != nil {
		return nil, fmt.Errorf("open docker site: %w", err)
	}
	return &Site{p: p, runID: runID, dir: dir, net: net, log: log}, nil
}

// Site is one variant's network and the containers started on it.
type Site struct {
	p     *Placement
	runID string
	dir   string // the variant's folder: its servers' logs
	net   *testcontainers.DockerNetwork
	log   *slog.Logger

	mu    sync.Mutex
	procs []*proc
	// onStart, when set, is told each program started (the run's journal).
	onStart func(lab.Program, lab.Proc)
}

func (s *Site) Placement() lab.Placement { return s.p }

// Network is the variant's network: servers join it, programs reach them
// on it by name.
func (s *Site) Network() *testcontainers.DockerNetwork { return s.net }

// RunID names the variant's containers and labels.
func (s *Site) RunID() string { return s.runID }

// Image is the image resolved for a name (see Placement.Image).
func (s *Site) Image(name string) string { return s.p.Image(name) }

func (s *Site) Note() string { return "" }

// Unenforced: the engine enforces every limit it is given.
func (s *Site) Unenforced() []string { return nil }

// Listen: every interface of the container; peers dial its address on the
// variant's network (no name lookups through the engine's DNS, which is
// busy while dozens of containers start).
func (s *Site) Listen() (string, string) { return "0.0.0.0", "auto" }

// Close removes every container still there and the network, then sweeps
// whatever else carries the variant's label.
func (s *Site) Close() error {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	// A few at a time: a hundred removals at once is where the engine
	// was seen to lose count of a network's endpoints.
	var wg sync.WaitGroup
	sem := make(chan struct{}, stopAtOnce)
	for _, p := range procs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p.Stop(3e9)
			_ = p.Release()
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*docker.OpTimeout)
	defer cancel()
	swept, err := docker.Sweep(ctx, s.runID)
	if len(swept.Stuck) > 0 {
		s.log.Warn("the container engine kept the run's network although no container is attached to it (a stale endpoint count, moby/moby#42119); nothing of the run is left in it, and restarting the engine removes it",
			"networks", swept.Stuck)
	}
	return err
}

// stopAtOnce bounds the containers stopped at once when a site closes.
const stopAtOnce = 8
