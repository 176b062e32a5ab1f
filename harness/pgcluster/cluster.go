// Package pgcluster runs a real PostgreSQL cluster on the local placement:
// a primary and N streaming replicas of Debian's postgresql-15, each a
// postmaster of its own on a free loopback port with its data in a folder
// the harness made (initdb, then pg_basebackup -R -X stream -C -S: one
// replication slot per replica), run as the postgres user (initdb refuses
// root), the primary optionally held to a CPU share by a cgroup of
// harness/limits. It reads health (a pgx ping), replication lag per
// replica and each server's load (connections, transaction and tuple
// counters, CPU). Close stops every process it started and removes its
// folders and cgroups.
//
// Containers (the official postgres image on the container placement) are
// not done yet.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chaoslab/chaoslab/harness/freeport"
	"github.com/chaoslab/chaoslab/harness/limits"
)

// Cluster is a running primary and its replicas.
type Cluster struct {
	o        options
	log      *slog.Logger
	root     string // the cluster's folder (owned by the user)
	tmp      bool   // root is ours to remove entirely
	uid, gid uint32
	primary  *Server
	replicas []*Server
	starter  *starter
	ownLim   *limits.Manager // made by Start, closed by Close

	closeOnce sync.Once
	closeErr  error
}

// Start initialises and starts the primary, then each replica from a base
// backup of it, and returns once every server answers and every replica
// streams. On error everything it started is stopped and removed.
func Start(ctx context.Context, opts ...Option) (c *Cluster, err error) {
	o := defaults()
	for _, f := range opts {
		f(&o)
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if o.ctr != nil {
		c = &Cluster{o: o, log: o.log}
		if err := c.startContainers(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("start postgres: %w", err), c.Close())
		}
		return c, nil
	}
	if _, err := os.Stat(filepath.Join(o.binDir, "postgres")); err != nil {
		return nil, fmt.Errorf("start postgres: %w (install postgresql-15: scripts/setup.sh)", err)
	}
	c = &Cluster{o: o, log: o.log}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	if err := c.prepare(); err != nil {
		return c, fmt.Errorf("start postgres: %w", err)
	}
	began := time.Now()
	ports, err := freeport.Loopback(1 + o.replicas)
	if err != nil {
		return c, fmt.Errorf("start postgres: %w", err)
	}
	if err := c.startPrimary(ctx, ports[0]); err != nil {
		return c, fmt.Errorf("start postgres: %w", err)
	}
	for i := range o.replicas {
		if err := c.startReplica(ctx, i+1, ports[i+1]); err != nil {
			return c, fmt.Errorf("start postgres: %w", err)
		}
	}
	if err := c.WaitStreaming(ctx); err != nil {
		return c, fmt.Errorf("start postgres: %w", err)
	}
	c.log.Info("pgcluster: ready", "primary", c.primary.Addr(), "replicas", o.replicas, "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// prepare finds the user and makes the cluster's folder, owned by it.
func (c *Cluster) prepare() error {
	u, err := user.Lookup(c.o.user)
	if err != nil {
		return fmt.Errorf("look up user: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	c.uid, c.gid = uint32(uid), uint32(gid)
	if uid == 0 {
		return errors.New("initdb refuses to run as root: name another user")
	}
	if c.o.dir != "" {
		c.root, err = os.MkdirTemp(c.o.dir, "pgcluster-")
	} else {
		c.root, err = os.MkdirTemp("", "chaoslab-pg-")
	}
	if err != nil {
		return fmt.Errorf("make folder: %w", err)
	}
	c.tmp = true
	if err := os.Chown(c.root, int(c.uid), int(c.gid)); err != nil {
		return fmt.Errorf("make folder: %w", err)
	}
	c.starter = newStarter()
	if c.o.primaryCPU > 0 && c.o.limits == nil {
		m, err := limits.NewManager(fmt.Sprintf("pgcluster-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9), c.log)
		if err != nil {
			return fmt.Errorf("create cgroups: %w", err)
		}
		c.ownLim, c.o.limits = m, m
	}
	return nil
}

// startPrimary runs initdb, writes the settings and starts the primary.
func (c *Cluster) startPrimary(ctx context.Context, port int) error {
	s := c.newServer("primary", port)
	if err := c.run(ctx, c.bin("initdb"), "-D", s.dataDir, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := c.appendConf(s.dataDir, "pg_hba.conf", "host replication all 127.0.0.1/32 trust\n"); err != nil {
		return err
	}
	if err := c.appendConf(s.dataDir, "postgresql.conf", c.conf(port)); err != nil {
		return err
	}
	if c.o.primaryCPU > 0 {
		g, err := c.o.limits.NewGroup(filepath.Base(c.root)+"-primary", limits.Limits{CPUCores: c.o.primaryCPU})
		if err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
		s.group = g
	}
	c.primary = s
	if err := s.start(); err != nil {
		return err
	}
	return s.WaitReady(ctx)
}

// startReplica takes a base backup of the primary with a slot of its own
// and the standby settings (-R), and starts it on port.
func (c *Cluster) startReplica(ctx context.Context, id, port int) error {
	s := c.newServer("replica"+strconv.Itoa(id), port)
	s.slot = "replica" + strconv.Itoa(id)
	if err := c.run(ctx, c.bin("pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.primary.port),
		"-U", "postgres", "-D", s.dataDir, "-R", "-X", "stream", "-C", "-S", s.slot, "--no-sync"); err != nil {
		return fmt.Errorf("base backup for %s: %w", s.name, err)
	}
	// Later lines win: the replica's own port, and its name at the primary.
	extra := fmt.Sprintf("port = %d\ncluster_name = '%s'\n", port, s.name)
	if err := c.appendConf(s.dataDir, "postgresql.conf", extra); err != nil {
		return err
	}
	if err := c.appendConf(s.dataDir, "postgresql.auto.conf", fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'\n", c.primary.port, s.name)); err != nil {
		return err
	}
	c.replicas = append(c.replicas, s)
	if err := s.start(); err != nil {
		return err
	}
	return s.WaitReady(ctx)
}

// newServer is a server's record with its pool (which connects lazily).
func (c *Cluster) newServer(name string, port int) *Server {
	s := &Server{c: c, name: name, dataDir: filepath.Join(c.root, name), port: port, done: make(chan struct{})}
	if err := s.openPool(); err != nil {
		panic("pgcluster: a pool of a fixed DSN: " + err.Error()) // cannot happen
	}
	return s
}

// openPool opens the harness's pool on s (which connects lazily).
func (s *Server) openPool() error {
	cfg, err := pgxpool.ParseConfig(s.DSN())
	if err == nil {
		cfg.MaxConns = 2
		s.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	}
	return err
}

// conf is what the primary's postgresql.conf gets (replicas copy it).
func (c *Cluster) conf(port int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n# chaoslab pgcluster\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = ''\n", port)
	b.WriteString("wal_level = replica\nmax_wal_senders = 16\nmax_replication_slots = 16\nhot_standby = on\n")
	b.WriteString("hot_standby_feedback = on\nfsync = off\nfull_page_writes = off\nlogging_collector = off\ncluster_name = 'primary'\n")
	for k, v := range c.o.settings {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(v, "'", "''"))
	}
	return b.String()
}

// appendConf appends text to a file of a data directory.
func (c *Cluster) appendConf(dataDir, file, text string) error {
	f, err := os.OpenFile(filepath.Join(dataDir, file), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	return f.Close()
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.o.binDir, name) }

func (c *Cluster) logPath(server string) string { return filepath.Join(c.root, server+".log") }

// command is name args run as the cluster's user, in a process group of
// its own, killed if the starting thread ends.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.root
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "HOME=" + c.root, "PGAPPNAME=chaoslab"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true, Pdeathsig: syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid},
	}
	return cmd
}

// run runs a short program (initdb, pg_basebackup) to its end.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := c.command(name, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	c.starter.do(func() { err = cmd.Start() })
	if err == nil {
		// Still ours until Wait returns: killed with its process group.
		stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		err = cmd.Wait()
		stop()
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, strings.TrimSpace(lastLines(out.String(), 5)))
	}
	return nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// Primary is the primary server.
func (c *Cluster) Primary() *Server { return c.primary }

// Replicas are the replicas, in order.
func (c *Cluster) Replicas() []*Server { return c.replicas }

// Servers are the primary, then the replicas.
func (c *Cluster) Servers() []*Server {
	if c.primary == nil {
		return c.replicas
	}
	return append([]*Server{c.primary}, c.replicas...)
}

// Dir is the cluster's folder (data directories and logs).
func (c *Cluster) Dir() string { return c.root }

// Close stops every server (replicas first), closes the pools, deletes the
// cgroups and removes the folder; it always does all of it and joins the
// errors. Idempotent.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*stopGrace)
	defer cancel()
	var errs []error
	ss := c.Servers()
	for i := len(ss) - 1; i >= 0; i-- {
		s := ss[i]
		if s.pool != nil {
			s.pool.Close()
		}
		errs = append(errs, s.Stop(ctx))
		if s.group != nil {
			errs = append(errs, s.group.Delete())
		}
	}
	if c.ownLim != nil {
		errs = append(errs, c.ownLim.Close())
	}
	if c.starter != nil {
		c.starter.stop()
	}
	if c.tmp && c.root != "" {
		if err := os.RemoveAll(c.root); err != nil {
			errs = append(errs, fmt.Errorf("remove folder: %w", err))
		}
	}
	c.log.Info("pgcluster: closed", "dir", c.root)
	return errors.Join(errs...)
}

// starter runs functions on one OS thread locked for the cluster's life,
// so that Pdeathsig (which fires when the forking thread ends) kills the
// servers only when the harness itself dies.
type starter struct {
	fns  chan func()
	once sync.Once
}

func newStarter() *starter {
	s := &starter{fns: make(chan func())}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		for f := range s.fns {
			f()
		}
	}()
	return s
}

func (s *starter) do(f func()) {
	done := make(chan struct{})
	s.fns <- func() { defer close(done); f() }
	<-done
}

func (s *starter) stop() { s.once.Do(func() { close(s.fns) }) }
