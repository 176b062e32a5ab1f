// Package local is the local placement: programs run as processes of this
// machine, each in a cgroup of its own (v1 or v2) that holds its memory,
// pids and CPU limits; servers listen on loopback. An OOM kill is read
// from the cgroup's own counters (or the kernel log).
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/infra/netcut"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Name is the placement's registered name.
const Name = "local"

func init() { lab.RegisterPlacement(Name, New) }

// Placement runs programs as local processes.
type Placement struct {
	opts lab.PlacementOptions
	log  *slog.Logger
	mu   sync.Mutex
	vers map[string]string
}

// New is the local placement of a run.
func New(o lab.PlacementOptions) (lab.Placement, error) {
	if o.AgentBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find agent binary: %w", err)
		}
		o.AgentBinary = exe
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Placement{opts: o, log: o.Log, vers: map[string]string{}}, nil
}

func (p *Placement) Name() string { return Name }

// RunsHostCommands: a user's client command runs here as it is.
func (p *Placement) RunsHostCommands() bool { return true }

// Available: processes can always be started; limits that cannot be
// enforced are said per variant (Site.Note).
func (p *Placement) Available(context.Context) error { return nil }

// Enforces says why programs' limits cannot be enforced here (nil: they
// can): cgroups need root, and a hierarchy to write.
func (p *Placement) Enforces() error {
	if os.Geteuid() != 0 {
		return errors.New("local processes are held to their limits by cgroups, which need root")
	}
	if mode, why := limits.Detect(); mode == limits.ModeNone {
		return fmt.Errorf("no cgroup can be used here: %s", why)
	}
	return nil
}

// Prepare removes the cgroups that crashed runs left behind.
func (p *Placement) Prepare(context.Context, []lab.ImageNeed) error {
	if err := limits.Sweep(p.log); err != nil {
		p.log.Warn("sweep leftover cgroups", "err", err)
	}
	return nil
}

func (p *Placement) Why() string { return "" }

// SetVersion records what a system used here (a binary and its version).
func (p *Placement) SetVersion(k, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.vers[k] = v
}

func (p *Placement) Versions() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for k, v := range p.vers {
		out[k] = v
	}
	return out
}

// Open makes the variant's cgroup parent.
func (p *Placement) Open(_ context.Context, runID, dir string, log *slog.Logger) (lab.Site, error) {
	mgr, err := limits.NewManager(runID, log)
	if err != nil {
		return nil, fmt.Errorf("create cgroups: %w", err)
	}
	return &Site{p: p, mgr: mgr, log: log, runID: runID, dir: dir}, nil
}

// Site is one variant's cgroup parent and the processes started in it.
type Site struct {
	p     *Placement
	mgr   *limits.Manager
	log   *slog.Logger
	runID string
	dir   string // the variant's folder: its servers' files and logs

	mu    sync.Mutex
	procs []*proc
	// userDirs are the folders of servers that run as another user.
	userDirs []string
	// onStart, when set, is told each program started (the run's journal).
	onStart func(lab.Program, lab.Proc)
	// unenforced are the limits programs asked for in ModeNone.
	unenforced map[string]bool
}

func (s *Site) Placement() lab.Placement { return s.p }

// Limits is the variant's cgroup manager (servers held to a CPU share).
func (s *Site) Limits() *limits.Manager { return s.mgr }

// ShareCPU holds every CPU-limited program of the variant to cores together.
func (s *Site) ShareCPU(cores float64) error { return s.mgr.LimitCPU(cores) }

// Listen: loopback.
func (s *Site) Listen() (string, string) { return "127.0.0.1", "" }

// Note says when no cgroup can be used: limits are then not enforced.
func (s *Site) Note() string {
	if s.mgr.Mode() == limits.ModeNone {
		return "no cgroup can be used here (" + s.mgr.Reason() + "): memory, pids and CPU limits are NOT enforced; memory growth is still measured"
	}
	return ""
}

// Unenforced names the limits programs asked for when no cgroup could be
// used.
func (s *Site) Unenforced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.unenforced))
}

// asked notes the limits prog asks for that the site cannot enforce.
func (s *Site) asked(l lab.Limits) {
	if s.mgr.Mode() != limits.ModeNone {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unenforced == nil {
		s.unenforced = map[string]bool{}
	}
	for name, set := range map[string]bool{"memory": l.MemoryMB > 0, "pids": l.Pids > 0, "cpu": l.CPUCores > 0} {
		if set {
			s.unenforced[name] = true
		}
	}
}

// Close stops what still runs and removes every cgroup of the variant.
func (s *Site) Close() error {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.Stop(3e9); _ = p.Release() })
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := []error{netcut.Sweep(ctx, s.runID), s.mgr.Close()}
	for _, d := range s.userDirs {
		errs = append(errs, os.RemoveAll(d))
	}
	return errors.Join(errs...)
}

// Binary is a server binary built (or found in the cache) by build, once
// per run, recorded with its version for the report.
func (p *Placement) Binary(ctx context.Context, name, version string, build func(context.Context, images.Options) (string, error)) (string, error) {
	bin, err := build(ctx, images.Options{Progress: progressLog{p.log}})
	if err != nil {
		return "", fmt.Errorf("prepare %s: %w", name, err)
	}
	p.SetVersion(name, version+" ("+bin+")")
	return bin, nil
}

// progressLog turns a build's progress lines into log lines.
type progressLog struct{ log *slog.Logger }

func (l progressLog) Write(b []byte) (int, error) {
	l.log.Info(strings.TrimSpace(string(b)))
	return len(b), nil
}
