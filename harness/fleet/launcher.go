package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/chaoslab/chaoslab/harness/limits"
)

// Launcher starts server incarnations: local processes in cgroups
// (ProcessLauncher) or containers (ContainerLauncher).
type Launcher interface {
	// ServerArgs are the flags of a server that depend on where it runs
	// (listen and advertised addresses).
	ServerArgs(id string) []string
	// Start runs one incarnation; it returns once it runs.
	Start(ctx context.Context, l Launch) (Proc, error)
}

// Launch is one incarnation of a server.
type Launch struct {
	ID          string
	Inc         int
	Args        []string // from "agent" on
	Env         []string
	ThreadLimit int
	CPUCores    float64
	// Stderr receives the server's log (and the Go runtime's last words).
	Stderr io.Writer
}

// Proc is a running incarnation.
type Proc interface {
	Desc() string
	// Pid is the server's process id on this machine (for /proc), 0 if unknown.
	Pid() int
	// Route is the host:port where the harness reaches the server's HTTP
	// endpoints ("" until known).
	Route() string
	// Pids returns the tasks in the server's cgroup and the thread
	// creations the kernel refused at pids.max (the last values read).
	Pids() (current int64, refused uint64)
	Signal(sig syscall.Signal) error
	// Wait blocks until the incarnation ended.
	Wait() ProcExit
	// Release frees what the incarnation held (cgroup, container).
	Release() error
}

// ProcExit is how an incarnation ended.
type ProcExit struct {
	Code   int
	Signal string
	Err    error
}

// ProcessLauncher runs servers as processes of Binary, each in a cgroup of
// its own whose pids.max is the thread limit.
type ProcessLauncher struct {
	Binary string
	Args   []string // before "agent", e.g. a test binary's flags
	Limits *limits.Manager
}

// ServerArgs: loopback, ports picked by the kernel, printed on stdout.
func (ProcessLauncher) ServerArgs(string) []string {
	return []string{"--peer-listen", "127.0.0.1:0", "--route-listen", "127.0.0.1:0"}
}

func (pl ProcessLauncher) Start(_ context.Context, l Launch) (Proc, error) {
	g, err := pl.Limits.NewGroup(fmt.Sprintf("%s-%d", l.ID, l.Inc), limits.Limits{PidsMax: int64(l.ThreadLimit), CPUCores: l.CPUCores})
	if err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	cmd := exec.Command(pl.Binary, append(append([]string{}, pl.Args...), l.Args...)...)
	cmd.Env = append(append(os.Environ(), "GOTRACEBACK=single"), l.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = l.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = g.Delete()
		return nil, err
	}
	if err := g.Start(cmd); err != nil {
		_ = g.Delete()
		return nil, fmt.Errorf("start server: %w", err)
	}
	p := &process{cmd: cmd, g: g, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var a struct{ Route string }
			if json.Unmarshal(sc.Bytes(), &a) == nil && a.Route != "" {
				p.mu.Lock()
				p.route = a.Route
				p.mu.Unlock()
			}
		}
		werr := cmd.Wait()
		e := ProcExit{Code: -1, Err: werr}
		if ps := cmd.ProcessState; ps != nil {
			e.Code = ps.ExitCode()
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				e.Signal = ws.Signal().String()
			}
		}
		p.Pids() // the counters as the incarnation left them
		p.exit = e
		close(p.done)
	}()
	return p, nil
}

type process struct {
	cmd  *exec.Cmd
	g    *limits.Group
	done chan struct{}
	exit ProcExit

	mu      sync.Mutex
	route   string
	cur     int64
	refused uint64
}

func (p *process) Desc() string { return fmt.Sprintf("pid %d", p.cmd.Process.Pid) }
func (p *process) Pid() int     { return p.cmd.Process.Pid }

func (p *process) Route() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.route
}

func (p *process) Pids() (int64, uint64) {
	st, err := p.g.Stats()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.cur, p.refused = st.Pids, max(p.refused, st.PidsLimitHits)
	}
	return p.cur, p.refused
}

// Signal signals the server's process group (only processes it started).
func (p *process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

func (p *process) Wait() ProcExit { <-p.done; return p.exit }

func (p *process) Release() error { return p.g.Delete() }
