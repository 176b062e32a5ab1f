package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/docker"
)

// Ports of a server inside its container.
const (
	containerPeerPort  = "7000"
	containerRoutePort = "8080"
)

// ContainerLauncher runs each server incarnation as a container of the
// chaoslab image on the run's network, with --pids-limit as its thread
// limit and --cpus as its CPU share. Peers reach a server by its id (the
// container's alias); the harness by the server's address on that
// network.
type ContainerLauncher struct {
	Image   string
	Network string
	RunID   string
	Logger  *slog.Logger
}

// debugLogger sends testcontainers' chatter to the debug level.
type debugLogger struct{ l *slog.Logger }

func (d debugLogger) Printf(format string, args ...any) {
	if d.l != nil {
		d.l.Debug(fmt.Sprintf(format, args...), "component", "testcontainers")
	}
}

// ServerArgs: listen on every interface of the container, advertise its
// address on the run's network (peers dial it without a name lookup).
func (ContainerLauncher) ServerArgs(id string) []string {
	return []string{"--peer-listen", "0.0.0.0:" + containerPeerPort, "--route-listen", "0.0.0.0:" + containerRoutePort, "--advertise", "auto"}
}

func (cl ContainerLauncher) Start(ctx context.Context, l Launch) (Proc, error) {
	name := fmt.Sprintf("%s-%s-%d", cl.RunID, l.ID, l.Inc)
	env := map[string]string{"GOTRACEBACK": "single"}
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	logs := &stderrLog{w: l.Stderr}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(name),
		testcontainers.WithCmd(l.Args...),
		testcontainers.WithEnv(env),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(cl.RunID), map[string]string{
			docker.LabelComponent: "frontend", docker.LabelMember: l.ID,
		})),
		network.WithNetworkName([]string{l.ID}, cl.Network),
		docker.WithPidsLimit(int64(l.ThreadLimit)),
		testcontainers.WithLogConsumers(logs),
		testcontainers.WithLogger(debugLogger{cl.Logger}),
	}
	if l.CPUCores > 0 {
		opts = append(opts, docker.WithCPULimit(l.CPUCores))
	}
	c, err := testcontainers.Run(ctx, cl.Image, opts...)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("start server container: %w", err)
	}
	p := &ctrProc{c: c, name: name, done: make(chan struct{})}
	if ins, err := c.Inspect(ctx); err == nil && ins.State != nil {
		p.pid = ins.State.Pid
		p.cgroup = pidsCgroupDir(p.pid)
	}
	// The harness reaches the server at its address on the run's own
	// network (this machine routes to its bridges), not through a
	// published port: 36 docker-proxy processes relaying every request and
	// health check would take CPU the fleet needs.
	ip, err := (&docker.Container{Container: c}).IP(ctx, cl.Network)
	if err != nil || !ip.IsValid() {
		_ = c.Terminate(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("find address of %s on %s: %v", name, cl.Network, err)
	}
	p.route = net.JoinHostPort(ip.String(), containerRoutePort)
	p.Pids()
	go p.watch()
	return p, nil
}

type ctrProc struct {
	c      testcontainers.Container
	name   string
	pid    int
	cgroup string
	route  string
	done   chan struct{}
	exit   ProcExit

	mu      sync.Mutex
	cur     int64
	refused uint64
}

func (p *ctrProc) Desc() string  { return "container " + p.name }
func (p *ctrProc) Pid() int      { return p.pid }
func (p *ctrProc) Route() string { return p.route }

// Pids reads the container's pids cgroup (found from its process).
func (p *ctrProc) Pids() (int64, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cgroup == "" {
		return p.cur, p.refused
	}
	if b, err := os.ReadFile(filepath.Join(p.cgroup, "pids.current")); err == nil {
		p.cur, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	if b, err := os.ReadFile(filepath.Join(p.cgroup, "pids.events")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "max "); ok {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				p.refused = max(p.refused, n)
			}
		}
	}
	return p.cur, p.refused
}

// Signal sends sig to the container's process (docker kill --signal).
func (p *ctrProc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	cli, err := docker.Client(context.Background())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.ContainerKill(ctx, p.c.GetContainerID(), client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))})
	if err != nil && !docker.IsNotFound(err) {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	return nil
}

func (p *ctrProc) watch() {
	defer close(p.done)
	for {
		time.Sleep(250 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ins, err := p.c.Inspect(ctx)
		cancel()
		if err != nil {
			if docker.IsNotFound(err) {
				p.exit = ProcExit{Code: -1, Err: err}
				return
			}
			continue
		}
		if ins.State == nil || ins.State.Running || ins.State.Paused {
			p.Pids()
			continue
		}
		// Give the log stream a moment to deliver the last lines.
		time.Sleep(300 * time.Millisecond)
		e := ProcExit{Code: ins.State.ExitCode}
		if ins.State.ExitCode > 128 {
			e.Signal = syscall.Signal(ins.State.ExitCode - 128).String()
		}
		p.exit = e
		return
	}
}

func (p *ctrProc) Wait() ProcExit { <-p.done; return p.exit }

func (p *ctrProc) Release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.c.Terminate(ctx); err != nil && !docker.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", p.name, err)
	}
	return nil
}

// stderrLog passes a container's output on to the server's log.
type stderrLog struct {
	mu sync.Mutex
	w  interface{ Write([]byte) (int, error) }
}

func (s *stderrLog) Accept(l testcontainers.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(l.Content)
}

// pidsCgroupDir finds the pids cgroup of a process: v1's pids hierarchy or
// the v2 unified one.
func pidsCgroupDir(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case strings.Contains(","+parts[1]+",", ",pids,"):
			return filepath.Join("/sys/fs/cgroup/pids", parts[2])
		case parts[0] == "0" && parts[1] == "":
			return filepath.Join("/sys/fs/cgroup", parts[2])
		}
	}
	return ""
}
