// Package etcdlocal runs a real etcd cluster as local processes on loopback:
// free ports, a data directory per member in a temporary folder, output
// routed to a log per member, every process stopped by Close.
package etcdlocal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/freeport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Options of a cluster.
type Options struct {
	// Members is the cluster size (default 3).
	Members int
	// Binary is the etcd server binary (required).
	Binary string
	// Dir holds the members' data directories (default: a new temp dir,
	// removed by Close).
	Dir string
	// Logs, when set, returns where a member's output goes.
	Logs   func(member string) io.Writer
	Logger *slog.Logger
}

// Member is one etcd process.
type Member struct {
	name   string
	client string // http://127.0.0.1:port
	args   []string
	out    io.Writer

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	paused bool
}

// Name is the member name (etcd1...).
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return m.client }

// Pid is the member's process id.
func (m *Member) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd.Process.Pid
}

// start runs the member's process (again, with the same data).
func (m *Member) start() error {
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = m.out, m.out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.done, m.paused = cmd, done, false
	m.mu.Unlock()
	go func() {
		err := cmd.Wait()
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		close(done)
	}()
	return nil
}

func (m *Member) state() (*exec.Cmd, chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd, m.done
}

// Running reports whether the member's process runs.
func (m *Member) Running() bool {
	_, done := m.state()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Paused reports whether the member is stopped by Pause.
func (m *Member) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

func (m *Member) signal(sig syscall.Signal) error {
	cmd, done := m.state()
	select {
	case <-done:
		return fmt.Errorf("signal %s: not running", m.name)
	default:
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// Pause stops the member's process (SIGSTOP); Resume continues it.
func (m *Member) Pause() error {
	if err := m.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	m.mu.Lock()
	m.paused = true
	m.mu.Unlock()
	return nil
}

// Resume continues a paused member (SIGCONT).
func (m *Member) Resume() error {
	if err := m.signal(syscall.SIGCONT); err != nil {
		return err
	}
	m.mu.Lock()
	m.paused = false
	m.mu.Unlock()
	return nil
}

// Kill kills the member's process (SIGKILL) and waits for it.
func (m *Member) Kill() error {
	_, done := m.state()
	_ = m.signal(syscall.SIGCONT)
	if err := m.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-done
	return nil
}

// Restart starts a member that is down again, with its data, and waits
// until it answers.
func (m *Member) Restart(ctx context.Context) error {
	if m.Running() {
		if err := m.Kill(); err != nil {
			return err
		}
	}
	if err := m.start(); err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Status(sctx, m.client)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart %s: %w (last: %v)", m.name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Cluster is a running local etcd cluster.
type Cluster struct {
	members []*Member
	dir     string
	tmp     bool
	log     *slog.Logger
	once    sync.Once
	err     error
}

// Start starts the cluster and waits until it serves linearizable reads.
func Start(ctx context.Context, o Options) (c *Cluster, err error) {
	if o.Members == 0 {
		o.Members = 3
	}
	if o.Members < 1 || o.Members > 7 {
		return nil, fmt.Errorf("start etcd: %d members: want 1 to 7", o.Members)
	}
	if o.Binary == "" {
		return nil, errors.New("start etcd: no etcd binary")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c = &Cluster{dir: o.Dir, log: o.Logger}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "chaoslab-etcd-"); err != nil {
			return nil, fmt.Errorf("start etcd: %w", err)
		}
		c.tmp = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	ports, err := freeport.Loopback(2 * o.Members)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	var initial []string
	for i := range o.Members {
		initial = append(initial, fmt.Sprintf("etcd%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	token := fmt.Sprintf("chaoslab-%d-%d", os.Getpid(), time.Now().UnixNano())
	for i := range o.Members {
		name := fmt.Sprintf("etcd%d", i+1)
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		data := filepath.Join(c.dir, name)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return c, fmt.Errorf("start etcd: %w", err)
		}
		m := &Member{name: name, client: client, out: io.Discard, args: []string{o.Binary,
			"--name", name, "--data-dir", data,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", token, "--log-level", "warn",
			"--listen-metrics-urls", "", "--heartbeat-interval", "100", "--election-timeout", "1000"}}
		if o.Logs != nil {
			m.out = o.Logs(name)
		}
		if err := m.start(); err != nil {
			return c, err
		}
		c.members = append(c.members, m)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		return c, err
	}
	return c, nil
}

// Members returns the members.
func (c *Cluster) Members() []*Member { return c.members }

// Endpoints returns the client URLs.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.client)
	}
	return out
}

// Client returns a client of the cluster (close it).
func (c *Cluster) Client() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect etcd: %w", err)
	}
	return cli, nil
}

// WaitHealthy waits until every member runs, the cluster has a leader and
// a linearizable read succeeds.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	cli, err := c.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	var last error
	for {
		last = c.health(ctx, cli)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for etcd: %w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) health(ctx context.Context, cli *clientv3.Client) error {
	for _, m := range c.members {
		if !m.Running() {
			return fmt.Errorf("%s is not running", m.name)
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, m.client)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if st.Leader == 0 {
			return fmt.Errorf("%s: no leader", m.name)
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := cli.Get(gctx, "/chaoslab/health"); err != nil {
		return fmt.Errorf("linearizable read: %w", err)
	}
	return nil
}

// Close stops every member (SIGTERM, then SIGKILL after 5 s) and removes a
// temporary data folder.
func (c *Cluster) Close() error {
	c.once.Do(func() {
		var errs []error
		for _, m := range c.members {
			_ = m.signal(syscall.SIGCONT)
			_ = m.signal(syscall.SIGTERM)
		}
		for _, m := range c.members {
			_, done := m.state()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = m.signal(syscall.SIGKILL)
				<-done
			}
		}
		if c.tmp {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, err)
			}
		}
		c.err = errors.Join(errs...)
	})
	return c.err
}
