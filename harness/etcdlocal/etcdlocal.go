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
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
}

// Name is the member name (etcd1...).
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return m.client }

// Pid is the member's process id.
func (m *Member) Pid() int { return m.cmd.Process.Pid }

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
		cmd := exec.Command(o.Binary,
			"--name", name, "--data-dir", data,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", token, "--log-level", "warn",
			"--listen-metrics-urls", "", "--heartbeat-interval", "100", "--election-timeout", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if o.Logs != nil {
			w := o.Logs(name)
			cmd.Stdout, cmd.Stderr = w, w
		}
		if err := cmd.Start(); err != nil {
			return c, fmt.Errorf("start %s: %w", name, err)
		}
		m := &Member{name: name, client: client, cmd: cmd, done: make(chan struct{})}
		go func() { m.err = cmd.Wait(); close(m.done) }()
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
		select {
		case <-m.done:
			return fmt.Errorf("%s exited: %v", m.name, m.err)
		default:
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
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
		}
		for _, m := range c.members {
			select {
			case <-m.done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
				<-m.done
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
