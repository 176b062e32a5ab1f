package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"time"
)

// A Placement is where programs run: local processes under cgroups,
// containers, pods of a Kubernetes cluster. One implementation per
// placement is shared by the servers of a system and the programs of a
// workload. See GUIDE.md for how the Kubernetes placement maps.
type Placement interface {
	Name() string
	// Available says whether this placement can be used here now (an
	// engine answers, cgroups can be written); auto placement asks it.
	Available(ctx context.Context) error
	// Prepare checks once per run what the run needs (these images) and
	// removes what crashed earlier runs left behind.
	Prepare(ctx context.Context, images []ImageNeed) error
	// Open makes the place of one variant (a cgroup parent, a network);
	// Site.Close removes it and everything started in it.
	Open(ctx context.Context, runID, dir string, log *slog.Logger) (Site, error)
	// Versions says what the run used (images, binaries), for the report.
	Versions() map[string]string
	// Why says how images or binaries were chosen ("" when nothing was).
	Why() string
}

// HostCommands is implemented by a placement that runs a command of this
// host as it is (local processes); a container placement needs the
// command's image as well (ClientProgram.Image).
type HostCommands interface {
	RunsHostCommands() bool
}

// RunsHostCommands says whether p runs a host's command as it is.
func RunsHostCommands(p Placement) bool {
	h, ok := p.(HostCommands)
	return ok && h.RunsHostCommands()
}

// LimitRefuser is implemented by a placement that cannot hold a program
// to every kind of limit on its own: RefusesLimit says why it cannot
// hold one ("pids", "memory", "cpu"), "" when it can.
type LimitRefuser interface {
	RefusesLimit(kind string) string
}

// RefusesLimit says why p cannot hold a program to a limit of kind ("":
// it can), so that a kind refuses a scenario before anything starts.
func RefusesLimit(p Placement, kind string) string {
	if r, ok := p.(LimitRefuser); ok {
		return r.RefusesLimit(kind)
	}
	return ""
}

// ImageNeed is an image a run needs on a container placement: Name is
// what --image NAME=REF and CHAOSLAB_<NAME>_IMAGE override, Ref the image
// the scenario names ("" for none), Defaults the images tried in order
// (the official one first, then the one `chaoslab images build` makes).
type ImageNeed struct {
	Name     string
	Ref      string
	Defaults []string
}

// AgentImage names the image of chaoslab's own agents ("client").
const AgentImage = "client"

// ImageNeeder is implemented by settings whose programs run from images
// on a container placement (a topology's servers, a workload's agents).
type ImageNeeder interface {
	Images() []ImageNeed
}

// PlacementOptions configure a placement for one run.
type PlacementOptions struct {
	// AgentBinary runs chaoslab's own agents as local processes (default:
	// this executable); AgentArgs come before "agent ..." (a test binary's
	// flags).
	AgentBinary string
	AgentArgs   []string
	// Images override the image of a system ("zookeeper", "client").
	Images map[string]string
	Log    *slog.Logger
}

// PlacementFactory builds a placement for a run.
type PlacementFactory func(o PlacementOptions) (Placement, error)

// LimitEnforcer is implemented by a placement that may be unable to
// enforce programs' limits here (local processes without root or
// cgroups): Enforces says why not (nil: it can). A run there that needs
// limits is inconclusive; a test can skip before it starts.
type LimitEnforcer interface {
	Enforces() error
}

// Site is one variant's place on a placement.
type Site interface {
	// Placement is the placement this site belongs to.
	Placement() Placement
	// Start runs a program under its limits; it returns once it runs.
	Start(ctx context.Context, p Program) (Proc, error)
	// ServerSite starts the servers of a system (Layout, StartServer).
	ServerSite
	// Listen is where a program started here listens so that the harness
	// and other programs reach it (127.0.0.1; 0.0.0.0 in a container), and
	// the host it advertises to peers ("" for the listen host; "auto" for
	// its own address on the site's network).
	Listen() (host, advertise string)
	// Owners is a snapshot of which program started here each client
	// address belongs to (a server's view of a connection, ip:port): the
	// sockets of the program's processes, or its container's address.
	Owners() func(remote string) Proc
	// Note says which limits are not enforced here ("" when all are).
	Note() string
	// Unenforced names the limits ("memory", "pids", "cpu") that programs
	// started here asked for and the site could not enforce: a run that
	// needed them cannot be judged on what they bound.
	Unenforced() []string
	// Close stops every program still running and removes the site.
	Close() error
}

// Preparer is implemented by a site where creating a program's sandbox is
// slow next to starting it (a container engine creates about one a
// second): Prepare creates it, and many programs prepared ahead start
// together.
type Preparer interface {
	Prepare(ctx context.Context, p Program) (Pending, error)
}

// HoldEnv set to 1 holds one of chaoslab's agents before it runs: it
// prints HeldLine and waits for SIGUSR1 (a container started ahead,
// released with its peers at once).
const (
	HoldEnv  = "CHAOSLAB_HOLD"
	HeldLine = `{"held":true}`
)

// Pending is a program created and not started.
type Pending interface {
	// Start starts it; it returns once it runs, like Site.Start.
	Start(ctx context.Context) (Proc, error)
}

// Controller is implemented by a site whose programs reach the
// controller (an in-process proxy of the harness) at another address than
// 127.0.0.1: a container reaches the machine at its network's gateway.
type Controller interface {
	ControllerHost(ctx context.Context) (string, error)
}

// ControllerReach is implemented by a placement whose programs may not
// reach a listener of the controller (this process) at all: pods of a
// cluster the lab drives from outside it.
type ControllerReach interface {
	ReachesController() error
}

// ReachesController says why programs started on p cannot reach a
// listener of the controller (nil: they can), so that a kind whose
// programs need one refuses the scenario before anything starts.
func ReachesController(p Placement) error {
	if r, ok := p.(ControllerReach); ok {
		return r.ReachesController()
	}
	return nil
}

// ControllerHost is where programs started on site reach a listener of
// the controller: 127.0.0.1 unless the site says otherwise.
func ControllerHost(ctx context.Context, site Site) (string, error) {
	if c, ok := site.(Controller); ok {
		return c.ControllerHost(ctx)
	}
	return "127.0.0.1", nil
}

// SharedCPU is implemented by a site that can hold every program of the
// variant with a CPU limit of its own to one budget together (local: the
// run's cgroup), so a workload calibrated on a small machine competes for
// CPU the same way on a bigger one.
type SharedCPU interface {
	ShareCPU(cores float64) error
}

// Program is one incarnation of a program to start on a Site.
type Program struct {
	// Name is unique in the variant ("client-03-1"); Alias is the host
	// name other programs reach it by (default Name).
	Name  string
	Alias string
	// Role says what it is (client, frontend, consul-agent): labels, logs.
	Role string
	// Agent runs chaoslab's own program `chaoslab agent AGENT --config
	// JSON` with Config as its one JSON document.
	Agent  string
	Config any
	// Command runs any other program instead: an argv on local processes,
	// the image's command in a container of Image.
	Command []string
	Image   string
	// Entrypoint replaces the image's entrypoint (nil: its own).
	Entrypoint []string
	// HostBinary, with a container placement, is this machine's build of
	// the program, bind-mounted read-only at HostBinaryAt in place of the
	// image's and read into this machine's page cache first: a memory
	// limit then holds the program's own memory, as for a local process,
	// and the kernel cannot reclaim the executable's pages to make room
	// for the heap (a Consul agent at its limit thrashed instead of being
	// OOM-killed).
	HostBinary, HostBinaryAt string
	Env                      []string
	Limits                   Limits
	// Files are written where the program sees them before it starts (a
	// path of this machine for a local process, of its container's file
	// system for a container), by path.
	Files map[string]string
	// Stdout receives every line the program prints on standard output;
	// Stderr its standard error (its log).
	Stdout func(line []byte)
	Stderr io.Writer
}

// AgentArgs are the arguments that run its agent with chaoslab's own
// program: `agent AGENT --config JSON`, Config its one JSON document.
func (p Program) AgentArgs() ([]string, error) {
	cfg, err := json.Marshal(p.Config)
	if err != nil {
		return nil, fmt.Errorf("encode config of %s: %w", p.Name, err)
	}
	return []string{"agent", p.Agent, "--config", string(cfg)}, nil
}

// Limits are a program's kernel-enforced limits; 0 means none.
type Limits struct {
	MemoryMB int
	// Pids caps processes and threads (a container's --pids-limit, a
	// cgroup's pids.max).
	Pids     int
	CPUCores float64
}

// Proc is a running program.
type Proc interface {
	// Desc says what it is ("pid 123", "container NAME").
	Desc() string
	// Pid is its process id on this machine (0 when unknown).
	Pid() int
	// Host is the address the harness reaches its ports at.
	Host() string
	Signal(sig syscall.Signal) error
	Pause() error
	Resume() error
	// Stats are its figures as the kernel counts them (the last read, also
	// after it ended).
	Stats() ProcStats
	// Done is closed when it ended; Exit says how.
	Done() <-chan struct{}
	Exit() ProcExit
	// Stop ends it (SIGTERM, SIGKILL after grace) and waits; the exit is
	// marked Stopped.
	Stop(grace time.Duration) ProcExit
	// Release frees what it held (cgroup, container). It is called once
	// the program ended.
	Release() error
}

// ProcStats are a program's figures.
type ProcStats struct {
	RSSBytes int64
	Threads  int
	// CPUSeconds is the user and system CPU time of its main process.
	CPUSeconds float64
	// Pids is the tasks counted against the pids limit; PidsRefused the
	// forks and clones the kernel refused at that limit.
	Pids        int64
	PidsRefused uint64
	// MemoryLimitBytes is the memory limit in force (0 = none).
	MemoryLimitBytes int64
	// MemoryChargedBytes is the memory the kernel charges to the
	// program's cgroup, what the limit is judged against (v1
	// memory.usage_in_bytes, v2 memory.current; a container's cgroup, as
	// the engine reports it); 0 when no cgroup accounts it. It counts
	// page cache and kernel memory and may differ from the RSS either way.
	MemoryChargedBytes int64
	// MemoryPeakBytes is the most the kernel has charged to it (v1
	// memory.max_usage_in_bytes, v2 memory.peak); 0 when not known.
	MemoryPeakBytes int64
	// MemoryNote says how the limit relates to Limits.MemoryMB when it
	// differs (a container's page cache allowance).
	MemoryNote string
}

// ProcExit is how a program ended.
type ProcExit struct {
	Code   int
	Signal string
	// OOM: killed by the kernel's OOM killer (cgroup counters, kernel log
	// or the engine's state).
	OOM bool
	// How says it in a sentence.
	How string
	// Stopped: ended by Stop (the harness), not by itself.
	Stopped bool
	Err     error
}

// AsExit is the report's form of an exit at time t.
func (e ProcExit) AsExit(t float64) Exit {
	return Exit{T: t, Code: e.Code, Signal: e.Signal, OOM: e.OOM, How: e.How}
}

// VersionRecorder is implemented by a placement that reports what a
// system used on it (a server binary and its version).
type VersionRecorder interface {
	SetVersion(k, v string)
}

// RecordVersion records on p, when it keeps them, what a system used.
func RecordVersion(p Placement, k, v string) {
	if r, ok := p.(VersionRecorder); ok {
		r.SetVersion(k, v)
	}
}

// LogWriter turns what is written to it (a build's progress lines) into
// log lines.
type LogWriter struct{ Log *slog.Logger }

func (w LogWriter) Write(b []byte) (int, error) {
	if w.Log != nil {
		w.Log.Info(strings.TrimSpace(string(b)))
	}
	return len(b), nil
}
