package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sys/unix"

	"github.com/chaoslab/chaoslab/harness/limits"
)

// stopGrace is how long Stop waits after a fast shutdown (SIGINT) before
// SIGKILL to it and its children.
const stopGrace = 10 * time.Second

// ErrNotRunning is returned when a server has no live process of ours.
var ErrNotRunning = errors.New("not running")

// Server is one postmaster of the cluster: the primary or a replica.
type Server struct {
	c       *Cluster
	name    string // "primary", "replica1"
	dataDir string
	port    int
	slot    string // a replica's replication slot on the primary
	group   *limits.Group
	pool    *pgxpool.Pool
	// host is the server's address ("" is 127.0.0.1) and ctr0 its
	// container (nil for a local postmaster).
	host string
	ctr0 *serverContainer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited bool
	done   chan struct{}
	state  *os.ProcessState
}

// Name is "primary" or "replicaN".
func (s *Server) Name() string { return s.name }

// Port is the server's TCP port on Host.
func (s *Server) Port() int { return s.port }

// Host is the server's address as the harness reaches it: 127.0.0.1, or
// its container's address on the run's network.
func (s *Server) Host() string {
	if s.host == "" {
		return "127.0.0.1"
	}
	return s.host
}

// Addr is "host:port".
func (s *Server) Addr() string { return net.JoinHostPort(s.Host(), strconv.Itoa(s.port)) }

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// Slot is a replica's replication slot on the primary ("" on the primary).
func (s *Server) Slot() string { return s.slot }

// DSN is a connection string for pgx (user postgres, trust, no TLS).
func (s *Server) DSN() string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=5", s.Host(), s.port)
}

// Pool is the harness's own small pool on the server (2 connections); an
// app's load should open its own.
func (s *Server) Pool() *pgxpool.Pool { return s.pool }

// Group is the server's cgroup (nil unless it is held to a CPU share).
func (s *Server) Group() *limits.Group { return s.group }

// Pid is the postmaster's process id (0 if it never started; in a
// container, its PID on this machine).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctr0 != nil {
		return s.ctr0.pid
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the postmaster runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctr0 != nil {
		return s.ctr0.ctr != nil && !s.exited
	}
	return s.cmd != nil && !s.exited
}

// Done is closed when the postmaster (of the latest start) has exited.
func (s *Server) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// start runs `postgres -D dataDir` as the cluster's user, in the server's
// cgroup if it has one, in a process group of its own.
func (s *Server) start() error {
	cmd := s.c.command(s.c.bin("postgres"), "-D", s.dataDir)
	out, err := os.OpenFile(s.c.logPath(s.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	s.c.starter.do(func() {
		if s.group != nil {
			err = s.group.Start(cmd)
		} else {
			err = cmd.Start()
		}
	})
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.mu.Lock()
	s.cmd, s.exited, s.done = cmd, false, make(chan struct{})
	s.mu.Unlock()
	s.c.log.Info("pgcluster: started", "server", s.name, "pid", cmd.Process.Pid, "port", s.port)
	go s.reap(cmd)
	return nil
}

// reap marks the process exited while it is still a zombie (so its pid,
// not yet reusable, is never signalled after), then reaps it.
func (s *Server) reap(cmd *exec.Cmd) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	s.mu.Lock()
	s.exited = true
	s.mu.Unlock()
	_ = cmd.Wait()
	s.mu.Lock()
	s.state = cmd.ProcessState
	s.mu.Unlock()
	s.c.log.Info("pgcluster: exited", "server", s.name, "pid", cmd.Process.Pid, "state", cmd.ProcessState.String())
	close(s.done)
}

// signal sends sig to the postmaster alone, or also to each of its
// children (backends, walsenders, the walreceiver...): every child calls
// setsid, so they are not in the postmaster's process group.
func (s *Server) signal(sig syscall.Signal, children bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.exited {
		return ErrNotRunning
	}
	pid := s.cmd.Process.Pid
	if children {
		// Children first, so none is forked by a postmaster already stopped
		// unseen; each is checked to be still the postmaster's child.
		for _, k := range childrenOf(pid) {
			_ = syscall.Kill(k, sig)
		}
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("send %v to %s: %w", sig, s.name, err)
	}
	return nil
}

// Pause stops the postmaster and its children (SIGSTOP).
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP, true) }

// Resume continues them (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT, true) }

// Stop shuts the server down fast (SIGINT to the postmaster: it ends its
// backends and exits), and SIGKILLs its process group after stopGrace or
// when ctx ends (and its children: they would end soon after it). A server that is not running is not an error.
func (s *Server) Stop(ctx context.Context) error {
	if s.ctr0 != nil {
		return s.stopContainer(ctx)
	}
	_ = s.signal(syscall.SIGCONT, true) // a paused server cannot shut down
	if err := s.signal(syscall.SIGINT, false); errors.Is(err, ErrNotRunning) {
		return nil
	} else if err != nil {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	done := s.Done()
	select {
	case <-done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	s.c.log.Warn("pgcluster: no fast shutdown; killing", "server", s.name)
	if err := s.signal(syscall.SIGKILL, true); err != nil && !errors.Is(err, ErrNotRunning) {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("stop %s: still running %v after SIGKILL", s.name, stopGrace)
	}
}

// Restart starts a stopped (or killed) server again on the same data and
// waits until it answers.
func (s *Server) Restart(ctx context.Context) error {
	if s.ctr0 != nil {
		return fmt.Errorf("restart %s: not done for a server in a container", s.name)
	}
	if s.Running() {
		if err := s.Stop(ctx); err != nil {
			return fmt.Errorf("restart %s: %w", s.name, err)
		}
	}
	if err := s.start(); err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	if err := s.WaitReady(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", s.name, err)
	}
	return nil
}

// Ready pings the server once (within 2 s).
func (s *Server) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", s.name, err)
	}
	return nil
}

// WaitReady pings the server every 100 ms until it answers, its process
// exits, or ctx ends.
func (s *Server) WaitReady(ctx context.Context) error {
	var last error
	done := s.Done()
	for {
		select {
		case <-done:
			return fmt.Errorf("wait for %s: exited (%v); see %s", s.name, s.state, s.c.logPath(s.name))
		default:
		}
		if last = s.Ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)", s.name, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
