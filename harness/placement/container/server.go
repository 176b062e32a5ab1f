package container

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Layout: the server's name on the variant's network, its image's ports,
// its files in /conf and its data in /data inside its container (the
// official images' folders), its output copied to the variant's log
// folder.
func (s *Site) Layout(spec lab.ServerSpec) (lab.ServerLayout, error) {
	l := lab.ServerLayout{Name: spec.Name, Role: spec.Role, Host: spec.Name, Bind: "0.0.0.0", Ports: map[string]int{},
		ConfDir: "/conf", DataDir: "/data", Log: filepath.Join(s.dir, "logs", spec.Name+".log")}
	for _, p := range spec.Ports {
		if p.Number <= 0 {
			return lab.ServerLayout{}, fmt.Errorf("lay out %s: port %s has no number in its image", spec.Name, p.Name)
		}
		l.Ports[p.Name] = p.Number
	}
	return l, nil
}

// StartServer creates the server's container from its image, with its
// files, on the variant's network, starts it and waits until it serves.
func (s *Site) StartServer(ctx context.Context, l lab.ServerLayout, p lab.ServerProgram) (lab.Server, error) {
	if s.Image(p.Image) == "" {
		return nil, fmt.Errorf("start %s: no %s image was prepared", l.Name, p.Image)
	}
	sv := &server{site: s, Base: servers.NewBase(l, p)}
	if err := sv.create(ctx); err != nil {
		return nil, err
	}
	if err := sv.Start(ctx); err != nil {
		return nil, err
	}
	return sv, nil
}

// server is one server's container: restarted in place (its data kept),
// or replaced by a new one of the same name (no data).
type server struct {
	*servers.Base
	site *Site

	mu     sync.Mutex
	pd     *pending
	logs   *docker.LogFollower
	proc   *proc
	paused bool
	cut    bool
}

// create makes the server's container, its output followed into its log.
func (sv *server) create(ctx context.Context) error {
	l, p := sv.Layout(), sv.Program()
	env := append(append([]string(nil), p.Env...), p.ImageEnv...)
	prog := lab.Program{Name: l.Name, Alias: l.Name, Role: l.Role, Image: sv.site.Image(p.Image), Entrypoint: p.ImageEntrypoint, Command: p.ImageArgs,
		HostBinary: p.HostBinary, HostBinaryAt: p.HostBinaryAt,
		Env: env, Limits: sv.Limits(), Files: sv.Files()}
	pd, err := sv.site.prepare(ctx, prog, false)
	if err != nil {
		return err
	}
	logs, err := docker.FollowLogs(ctx, pd.(*pending).c.GetContainerID(), l.Log)
	if err != nil {
		_ = pd.(*pending).c.Terminate(context.WithoutCancel(ctx))
		return fmt.Errorf("start %s: %w", l.Name, err)
	}
	sv.mu.Lock()
	sv.pd, sv.logs = pd.(*pending), logs
	sv.mu.Unlock()
	return nil
}

func (sv *server) current() *proc {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.proc
}

func (sv *server) Proc() lab.Proc {
	if p := sv.current(); p != nil {
		return p
	}
	return nil
}

// Addr: the harness dials the container's address on the variant's
// network (this machine routes to it); programs there dial its name.
func (sv *server) Addr(port string, v lab.View) string {
	l := sv.Layout()
	if p := sv.current(); v == lab.FromHost && p != nil && p.Host() != "" {
		return net.JoinHostPort(p.Host(), strconv.Itoa(l.Ports[port]))
	}
	return l.Addr(port)
}

func (sv *server) Running() bool {
	p := sv.current()
	return p != nil && !p.ended()
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
		return fmt.Errorf("pause %s: %w", sv.Name(), servers.ErrNotRunning)
	}
	op := p.Resume
	if on {
		op = p.Pause
	}
	if err := op(); err != nil {
		return err
	}
	sv.mu.Lock()
	sv.paused = on
	sv.mu.Unlock()
	return nil
}

// Kill: SIGKILL through the engine, waited for; the container stays.
func (sv *server) Kill() error {
	p := sv.current()
	if p == nil || p.ended() {
		return fmt.Errorf("kill %s: %w", sv.Name(), servers.ErrNotRunning)
	}
	sv.Stop(0)
	return nil
}

// Stop stops the container (it stays, with its data).
func (sv *server) Stop(grace time.Duration) lab.ProcExit {
	p := sv.current()
	if p == nil {
		return lab.ProcExit{}
	}
	_ = p.c.Unpause(context.Background())
	var e lab.ProcExit
	if grace <= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), docker.OpTimeout)
		_ = p.c.Kill(ctx)
		cancel()
		e = p.Exit()
	} else {
		e = p.Stop(grace)
	}
	sv.mu.Lock()
	sv.paused = false
	sv.mu.Unlock()
	return e
}

// Start starts the container (again, with its data) and waits until the
// server serves.
func (sv *server) Start(ctx context.Context) error { return sv.start(ctx, false) }

// start starts it and waits until it serves (until it answers, for a
// replacement).
func (sv *server) start(ctx context.Context, up bool) error {
	if sv.Running() {
		return fmt.Errorf("start %s: already running", sv.Name())
	}
	sv.mu.Lock()
	pd := sv.pd
	sv.mu.Unlock()
	off := logSize(sv.Layout().Log)
	if err := pd.c.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w\n%s", sv.Name(), err, sv.LogTail(off, 25))
	}
	p, err := pd.running(ctx)
	if err != nil {
		return err
	}
	sv.site.started(p)
	sv.mu.Lock()
	sv.proc, sv.paused = p, false
	sv.mu.Unlock()
	if c := sv.Limits().CPUCores; c > 0 {
		if err := p.c.LimitCPU(ctx, c); err != nil {
			return fmt.Errorf("start %s: %w", sv.Name(), err)
		}
	}
	return sv.WaitReady(ctx, sv, p, off, up)
}

// Replace removes the container and starts a new one of the same name:
// the same files and limits, no data.
func (sv *server) Replace(ctx context.Context) error {
	if err := sv.remove(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", sv.Name(), err)
	}
	if err := sv.create(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", sv.Name(), err)
	}
	return sv.start(ctx, true)
}

// remove removes the container and ends the copy of its output.
func (sv *server) remove(ctx context.Context) error {
	sv.mu.Lock()
	pd, logs := sv.pd, sv.logs
	sv.mu.Unlock()
	_ = (&docker.Container{Container: pd.c}).Unpause(ctx)
	err := pd.c.Terminate(context.WithoutCancel(ctx))
	if err != nil && !docker.IsNotFound(err) {
		return err
	}
	if logs != nil {
		_ = logs.Wait(5 * time.Second)
	}
	if p := sv.current(); p != nil {
		<-p.done
	}
	return nil
}

// SetCPU: docker update --cpus, now and after each restart.
func (sv *server) SetCPU(cores float64) error {
	sv.SetCPUCores(cores)
	p := sv.current()
	if p == nil || p.ended() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), docker.OpTimeout)
	defer cancel()
	return p.c.LimitCPU(ctx, cores)
}

// CPU reads the limit back from the engine.
func (sv *server) CPU() (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), docker.OpTimeout)
	defer cancel()
	return sv.container().CPULimit(ctx)
}

// SetMemory: docker update --memory (no swap).
func (sv *server) SetMemory(mb int) error {
	sv.SetMemoryMB(mb)
	ctx, cancel := context.WithTimeout(context.Background(), docker.OpTimeout)
	defer cancel()
	return sv.container().SetMemoryLimit(ctx, int64(mb)<<20)
}

// Memory reads the limit back from the engine (MiB).
func (sv *server) Memory() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), docker.OpTimeout)
	defer cancel()
	b, err := sv.container().MemoryLimit(ctx)
	return int(b >> 20), err
}

func (sv *server) container() *docker.Container {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return &docker.Container{Container: sv.pd.c}
}

// Disconnect takes the container off the variant's network: peers and
// the harness stop reaching it.
func (sv *server) Disconnect(ctx context.Context) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.cut {
		return nil
	}
	c := &docker.Container{Container: sv.pd.c}
	if err := c.Disconnect(ctx, sv.site.net.Name); err != nil {
		return fmt.Errorf("disconnect %s: %w", sv.Name(), err)
	}
	sv.cut = true
	return nil
}

// Reconnect puts it back on the network, at its address and name.
func (sv *server) Reconnect(ctx context.Context) error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if !sv.cut {
		return nil
	}
	// Back by its name: the engine gives it an address of the network's
	// again (it takes none asked for on a network of its own subnet).
	c := &docker.Container{Container: sv.pd.c}
	if err := c.Connect(ctx, sv.site.net.Name, netip.Addr{}, sv.Name()); err != nil {
		return fmt.Errorf("reconnect %s: %w", sv.Name(), err)
	}
	sv.cut = false
	if sv.proc != nil {
		if ip, err := c.IP(ctx, sv.site.net.Name); err == nil && ip.IsValid() {
			sv.proc.setIP(ip.String())
		}
	}
	return nil
}

// Disconnected reads the container's networks back from the engine.
func (sv *server) Disconnected() bool {
	ctx, cancel := context.WithTimeout(context.Background(), docker.OpTimeout)
	defer cancel()
	ins, err := sv.container().Inspect(ctx)
	if err != nil || ins.NetworkSettings == nil {
		return false
	}
	_, on := ins.NetworkSettings.Networks[sv.site.net.Name]
	return !on
}

// logSize is the size of a log file (0 when it does not exist yet).
func logSize(path string) int64 {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || err != nil {
		return 0
	}
	return st.Size()
}

var (
	_ lab.ServerSite = (*Site)(nil)
	_ lab.Server     = (*server)(nil)
)

// State reads the container's state from the engine.
func (sv *server) State(ctx context.Context) (string, error) {
	st, err := sv.container().RunState(ctx)
	switch {
	case err != nil:
		return "", fmt.Errorf("read state of %s: %w", sv.Name(), err)
	case st.Paused:
		return lab.StatePaused, nil
	case st.Running:
		return lab.StateRunning, nil
	}
	return lab.StateExited, nil
}
