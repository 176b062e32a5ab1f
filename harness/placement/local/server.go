package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/freeport"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/infra/netcut"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Layout: free ports on loopback, the server's files in a folder of its
// own in the variant's folder, its output in the variant's log folder.
func (s *Site) Layout(spec lab.ServerSpec) (lab.ServerLayout, error) {
	ports, err := freeport.Loopback(len(spec.Ports))
	if err != nil {
		return lab.ServerLayout{}, fmt.Errorf("lay out %s: %w", spec.Name, err)
	}
	dir := filepath.Join(s.dir, spec.Name)
	data := filepath.Join(dir, "data")
	if spec.User != "" {
		// The run's folder may be closed to other users: the server's
		// folders go where its user reaches them, removed with the site.
		if dir, err = s.userDir(spec.Name); err != nil {
			return lab.ServerLayout{}, fmt.Errorf("lay out %s: %w", spec.Name, err)
		}
		data = dir
	}
	l := lab.ServerLayout{Name: spec.Name, Role: spec.Role, Host: "127.0.0.1", Bind: "127.0.0.1", Ports: map[string]int{},
		ConfDir: dir, DataDir: filepath.Join(dir, "data"), HostDataDir: data,
		Log: filepath.Join(s.dir, "logs", spec.Name+".log")}
	for i, p := range spec.Ports {
		l.Ports[p.Name] = ports[i]
	}
	return l, nil
}

// StartServer starts the server's command as a process of this machine,
// in a cgroup of its own (one per incarnation, under the same limits).
func (s *Site) StartServer(ctx context.Context, l lab.ServerLayout, p lab.ServerProgram) (lab.Server, error) {
	if len(p.Command) == 0 {
		return nil, fmt.Errorf("start %s: its system gives no command for local processes", l.Name)
	}
	sv := &server{site: s, Base: servers.NewBase(l, p)}
	if err := sv.Start(ctx); err != nil {
		return nil, err
	}
	return sv, nil
}

// server is one server as local processes, one per incarnation.
type server struct {
	*servers.Base
	site *Site

	mu     sync.Mutex
	n      int // incarnations started
	proc   *proc
	paused bool
	cut    *cut
}

func (sv *server) Proc() lab.Proc {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.proc == nil {
		return nil
	}
	return sv.proc
}

func (sv *server) current() *proc {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.proc
}

// Addr: loopback from anywhere.
func (sv *server) Addr(port string, _ lab.View) string { return sv.Layout().Addr(port) }

func (sv *server) Running() bool {
	p := sv.current()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (sv *server) Paused() bool {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.paused && sv.proc != nil && !sv.proc.ended()
}

func (sv *server) Pause() error  { return sv.setPaused(true) }
func (sv *server) Resume() error { return sv.setPaused(false) }

func (sv *server) setPaused(on bool) error {
	p := sv.current()
	if p == nil || p.ended() {
		return fmt.Errorf("pause %s: not running", sv.Name())
	}
	op := p.Resume
	if on {
		op = p.Pause
	}
	if err := op(); err != nil {
		return fmt.Errorf("signal %s: %w", sv.Name(), err)
	}
	sv.mu.Lock()
	sv.paused = on
	sv.mu.Unlock()
	return nil
}

// Kill: SIGKILL, waited for.
func (sv *server) Kill() error {
	p := sv.current()
	if p == nil || p.ended() {
		return fmt.Errorf("kill %s: not running", sv.Name())
	}
	sv.end(0)
	return nil
}

func (sv *server) Stop(grace time.Duration) lab.ProcExit { return sv.end(grace) }

// end stops the current incarnation and frees its cgroup.
func (sv *server) end(grace time.Duration) lab.ProcExit {
	p := sv.current()
	if p == nil {
		return lab.ProcExit{}
	}
	_ = p.Signal(syscall.SIGCONT)
	e := p.Stop(grace)
	_ = p.Release()
	sv.mu.Lock()
	sv.paused = false
	sv.mu.Unlock()
	return e
}

// Start starts a new incarnation with the server's files and limits and
// waits until it serves.
func (sv *server) Start(ctx context.Context) error { return sv.start(ctx, false) }

// start starts it and waits until it serves (until it answers, for a
// replacement).
func (sv *server) start(ctx context.Context, up bool) error {
	if sv.Running() {
		return fmt.Errorf("start %s: already running", sv.Name())
	}
	l := sv.Layout()
	if err := os.MkdirAll(filepath.Dir(l.Log), 0o755); err != nil {
		return fmt.Errorf("start %s: %w", sv.Name(), err)
	}
	out, err := os.OpenFile(l.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: open log: %w", sv.Name(), err)
	}
	off, _ := out.Seek(0, 2)
	sv.mu.Lock()
	sv.n++
	name := l.Name
	if sv.n > 1 {
		name += "-" + strconv.Itoa(sv.n)
	}
	sv.mu.Unlock()
	prog := sv.Program()
	argv, netGroup := prog.Command, ""
	if netcut.Available() == nil {
		if argv, netGroup, err = netcut.Wrap(sv.site.runID, l.Name, argv); err != nil {
			out.Close()
			return err
		}
	}
	pr, err := sv.site.Start(ctx, lab.Program{Name: name, Role: l.Role, Command: argv, Env: prog.Env, Limits: sv.Limits(), Files: sv.Files(),
		Stdout: servers.LineWriter(out), Stderr: out})
	if err != nil {
		out.Close()
		return err
	}
	p := pr.(*proc)
	p.netGroup = netGroup
	go func() { <-p.done; out.Close() }()
	sv.mu.Lock()
	sv.proc, sv.paused = p, false
	sv.mu.Unlock()
	if err := sv.keepCut(ctx, p); err != nil {
		return fmt.Errorf("start %s: keep it disconnected: %w", sv.Name(), err)
	}
	return sv.WaitReady(ctx, sv, p, off, up)
}

// Replace stops the server, removes its data and starts it fresh.
func (sv *server) Replace(ctx context.Context) error {
	if sv.Running() {
		sv.end(0)
	}
	if err := sv.RemoveData(); err != nil {
		return err
	}
	return sv.start(ctx, true)
}

// SetCPU holds the running incarnation (and the later ones) to cores.
func (sv *server) SetCPU(cores float64) error {
	sv.Base.SetCPUCores(cores)
	p := sv.current()
	if p == nil || p.ended() {
		return nil
	}
	return p.g.SetCPULimit(cores)
}

// CPU reads the limit back from the cgroup.
func (sv *server) CPU() (float64, error) {
	p := sv.current()
	if p == nil {
		return 0, errors.New("not started")
	}
	return p.g.CPULimit()
}

// SetMemory changes the memory limit of the running incarnation (and the
// later ones).
func (sv *server) SetMemory(mb int) error {
	sv.Base.SetMemoryMB(mb)
	p := sv.current()
	if p == nil || p.ended() {
		return nil
	}
	return p.g.SetMemoryLimit(int64(mb) << 20)
}

// Memory reads the limit back from the cgroup (MiB).
func (sv *server) Memory() (int, error) {
	p := sv.current()
	if p == nil {
		return 0, errors.New("not started")
	}
	st, err := p.g.Stats()
	if err != nil {
		return 0, err
	}
	return int(st.MemoryLimitBytes >> 20), nil
}

// cut is a server cut off the network (netcut): the cgroups its
// incarnations' sockets are told by.
type cut struct {
	groups []string
}

// netGroup is the cgroup v2 group p's sockets are told by: the network
// group its command was wrapped in (hybrid), or its own group (v2).
func (sv *server) netGroup(p *proc) string {
	if p.netGroup != "" {
		return p.netGroup
	}
	if p.g.Mode() == limits.ModeV2 {
		return p.g.Path()
	}
	return ""
}

// Disconnect cuts the server off every peer and client (netcut): new
// connections to it are refused, established ones stall.
func (sv *server) Disconnect(ctx context.Context) error {
	if err := netcut.Available(); err != nil {
		return fmt.Errorf("disconnect %s: %w", sv.Name(), err)
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.cut != nil {
		return nil
	}
	c := &cut{}
	if sv.proc != nil {
		if g := sv.netGroup(sv.proc); g != "" {
			c.groups = append(c.groups, g)
		}
	}
	if err := netcut.Cut(ctx, sv.site.runID, sv.Name(), sv.ports(), c.groups); err != nil {
		return err
	}
	sv.cut = c
	return nil
}

// keepCut extends a cut to a new incarnation's group (cgroup v2: each
// incarnation has a group of its own).
func (sv *server) keepCut(ctx context.Context, p *proc) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	g := sv.netGroup(p)
	if sv.cut == nil || g == "" || slices.Contains(sv.cut.groups, g) {
		return nil
	}
	sv.cut.groups = append(sv.cut.groups, g)
	if err := netcut.Restore(ctx, sv.site.runID, sv.Name()); err != nil {
		return err
	}
	return netcut.Cut(ctx, sv.site.runID, sv.Name(), sv.ports(), sv.cut.groups)
}

// Reconnect lifts the cut.
func (sv *server) Reconnect(ctx context.Context) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.cut == nil {
		return nil
	}
	if err := netcut.Restore(ctx, sv.site.runID, sv.Name()); err != nil {
		return err
	}
	sv.cut = nil
	return nil
}

// Disconnected reads the cut back from nftables.
func (sv *server) Disconnected() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return netcut.IsCut(ctx, sv.site.runID, sv.Name())
}

func (sv *server) ports() []int {
	var out []int
	for _, p := range sv.Layout().Ports {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

var (
	_ lab.ServerSite = (*Site)(nil)
	_ lab.Server     = (*server)(nil)
)

// State reads the process's state from /proc: T (stopped by a signal) is
// paused.
func (sv *server) State(context.Context) (string, error) {
	p := sv.current()
	if p == nil || p.ended() {
		return lab.StateExited, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/stat")
	if err != nil {
		return "", fmt.Errorf("read state of %s: %w", sv.Name(), err)
	}
	st := string(b)
	if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
		switch st[i+2] {
		case 'T', 't':
			return lab.StatePaused, nil
		case 'Z', 'X':
			return lab.StateExited, nil
		}
		return lab.StateRunning, nil
	}
	return "", fmt.Errorf("read state of %s: %q", sv.Name(), st)
}

// userDir is a folder of this machine's temporary folder for a server
// that runs as another user, open to it (0755), removed by Close.
func (s *Site) userDir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "chaoslab-"+s.runID+"-"+name+"-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.userDirs = append(s.userDirs, dir)
	s.mu.Unlock()
	return dir, nil
}
