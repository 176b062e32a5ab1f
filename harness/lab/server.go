package lab

import (
	"context"
	"net"
	"strconv"
	"time"
)

// A system describes its servers; the placement starts them. A system
// asks its site where each server will be (Layout: the host peers reach
// it at, the ports it binds, its folders), renders each server's program
// for those places (ServerProgram: its command on this machine, its image
// and arguments in a container, its files), and starts it (StartServer).
// The placement gives back a Server: one server across its restarts and
// replacements, with the generic faults (pause, kill, restart keeping
// data, replace with fresh data, CPU and memory limits, disconnect)
// implemented once per placement.

// ServerSpec is what a system asks of a site for one server before it
// renders its configuration.
type ServerSpec struct {
	// Name is its name in the variant ("zk1"); on a container placement
	// peers reach it by this name.
	Name string
	// Role labels it (zookeeper, etcd, consul-server).
	Role string
	// User, when set, is the user the program switches to itself (its
	// start script: PostgreSQL refuses root): its folders are laid out
	// where that user can reach them.
	User string
	// Ports are the ports it listens on, by name, with the number its
	// image uses ("client": 2181). A container binds these; a local
	// process gets a free loopback port for each.
	Ports []Port
}

// Port is one named port of a server.
type Port struct {
	Name string
	// Number is the port its image listens on (the official one's).
	Number int
}

// ServerLayout is where a server of a site will be: what its
// configuration names.
type ServerLayout struct {
	Name string
	Role string
	// Host is where peers and the harness reach it: 127.0.0.1, or its
	// name on the variant's network.
	Host string
	// Bind is the address it listens on (127.0.0.1, 0.0.0.0).
	Bind string
	// Ports are the port numbers it binds and peers dial, by name.
	Ports map[string]int
	// ConfDir and DataDir are its configuration and data folders as the
	// program sees them (on this machine, or inside its container).
	ConfDir, DataDir string
	// HostDataDir is its data on this machine ("" when it lives in the
	// container, removed with it).
	HostDataDir string
	// Log is the file its output goes to, on this machine.
	Log string
}

// Addr is host:port of a named port as peers dial it.
func (l ServerLayout) Addr(port string) string {
	return net.JoinHostPort(l.Host, strconv.Itoa(l.Ports[port]))
}

// BindAddr is bind:port of a named port, what the server listens on.
func (l ServerLayout) BindAddr(port string) string {
	return net.JoinHostPort(l.Bind, strconv.Itoa(l.Ports[port]))
}

// ServerProgram is how a server runs, rendered by its system for its
// layout: Command on this machine (the local placement), Image with
// ImageArgs in a container. Files are written, at the paths the program
// sees, before each start.
type ServerProgram struct {
	// Command is its argv on this machine.
	Command []string
	// Image is the name of its image in the run (ImageNeed.Name);
	// ImageEntrypoint replaces the image's entrypoint (nil: its own),
	// ImageArgs its command (nil: the image's own) and ImageEnv is what
	// the image's entrypoint reads.
	Image           string
	ImageEntrypoint []string
	ImageArgs       []string
	ImageEnv        []string
	// HostBinary, when set, runs this machine's build of the server in
	// its container, at HostBinaryAt (lab.Program.HostBinary).
	HostBinary, HostBinaryAt string
	// Env is its environment on every placement.
	Env []string
	// Files by path as the program sees it (under ConfDir or DataDir):
	// written before its first start and kept across restarts (WriteFile
	// changes one for the next start); a replacement starts with them
	// again and nothing else.
	Files  map[string]string
	Limits Limits
	// Ready, when set, says whether the server serves (one probe, with
	// the deadline of ctx), at the address the harness reaches it at;
	// StartServer and Start return once it does.
	Ready func(ctx context.Context, s Server) error
	// Up, when set, says whether a replaced server's process answers
	// (it may not serve until it has caught up with its peers, which a
	// replacement's gate measures); Replace returns once it does.
	Up func(ctx context.Context, s Server) error
	// ReadyTimeout bounds that wait (default 2 min).
	ReadyTimeout time.Duration
}

// ServerSite is implemented by every placement's site: it starts the
// servers of a system.
type ServerSite interface {
	// Layout says where a server of spec will be.
	Layout(spec ServerSpec) (ServerLayout, error)
	// StartServer starts a server laid out by Layout and returns it once
	// it runs (and serves, when the program says how to tell).
	StartServer(ctx context.Context, l ServerLayout, p ServerProgram) (Server, error)
}

// A Server is one server a site started: the same server across its
// restarts and replacements. Every method acts only on what the site
// started.
type Server interface {
	Name() string
	Layout() ServerLayout
	// Addr is where a named port is reached from v: the harness on this
	// machine (FromHost), or a program on the site (FromSite).
	Addr(port string, v View) string
	// Proc is its current process (its last, once it ended).
	Proc() Proc
	Running() bool
	Paused() bool
	// State reads its state back from the kernel or the engine: running,
	// paused (stopped by a signal, or a paused container) or exited.
	State(ctx context.Context) (string, error)
	Pause() error
	Resume() error
	// Kill ends it with SIGKILL and waits for its exit.
	Kill() error
	// Stop ends it (SIGTERM, SIGKILL after grace) and waits.
	Stop(grace time.Duration) ProcExit
	// Start starts it again with its data (after Kill, Stop or a crash).
	Start(ctx context.Context) error
	// Replace stops it and starts a fresh one in its place: the same name,
	// address, files and limits, and no data; it returns once the fresh
	// one answers (ServerProgram.Up), before it has caught up.
	Replace(ctx context.Context) error
	// WriteFile changes one of its files (a path of ServerProgram.Files);
	// it is read at its next start.
	WriteFile(path, content string) error
	// File is one of its files as it will be written at its next start.
	File(path string) (string, bool)
	// SetCPU holds it to cores (0: no limit), from now on and after its
	// restarts; CPU reads the limit back from the kernel or the engine.
	SetCPU(cores float64) error
	CPU() (float64, error)
	// SetMemory sets its memory limit (MiB, 0: none) from now on; Memory
	// reads it back.
	SetMemory(mb int) error
	Memory() (int, error)
	// Disconnect cuts it off from every peer and client until Reconnect;
	// Disconnected says whether it is cut off now.
	Disconnect(ctx context.Context) error
	Reconnect(ctx context.Context) error
	Disconnected() bool
}

// Server states as State reads them.
const (
	StateRunning = "running"
	StatePaused  = "paused"
	StateExited  = "exited"
)
