package dockeretcd

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
)

// The faults a Member supports beyond faults.Target.
var (
	_ faults.Target              = (*Member)(nil)
	_ faults.CPULimiter          = (*Member)(nil)
	_ faults.CPULimitReader      = (*Member)(nil)
	_ faults.Replacer            = (*Member)(nil)
	_ faults.NetworkDisconnector = (*Member)(nil)
)

// ErrNotRunning is returned when a member has no running container.
var ErrNotRunning = docker.ErrNotRunning

// Member is one etcd member container of a Cluster.
type Member struct {
	id      int
	name    string
	cl      *Cluster
	logPath string
	base    docker.Member // the container faults, marks and log tail

	opMu sync.Mutex // serialises Kill, Restart, Replace, Disconnect, Reconnect

	mu       sync.Mutex
	cfg      MemberConfig // the command line of the current container
	ctr      *Container   // nil before the first create and after remove
	addr     string       // 127.0.0.1:port of the client port, "" if unknown
	metrics  string       // 127.0.0.1:port of the metrics port
	memberID uint64       // etcd's member ID, 0 until the member answered
	logs     *docker.LogFollower
	cli      *clientv3.Client // for Status, bound to cliAddr
	cliAddr  string
}

// newMember returns member id of the cluster, without a container yet.
func newMember(cl *Cluster, id int) *Member {
	m := &Member{
		id: id, name: MemberName(id), cl: cl, cfg: cl.opts.memberConfig(id),
		logPath: filepath.Join(cl.opts.LogDir, MemberName(id)+".log"),
	}
	m.base = docker.Member{
		Name: m.name, LogPath: m.logPath, Prefix: "dockeretcd", Key: "member", Log: cl.log,
		Container: docker.Current(m.Container),
	}
	return m
}

// ID is the member's number in the cluster (1..N).
func (m *Member) ID() int { return m.id }

// Name is the member's --name, network alias and hostname, "etcd1".
func (m *Member) Name() string { return m.name }

// ContainerName is "<RunID>-etcdN".
func (m *Member) ContainerName() string { return ContainerName(m.cl.opts.RunID, m.id) }

// Container returns the member's current container (a Replace makes a new
// one), or nil.
func (m *Member) Container() *Container {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ctr
}

// ContainerID returns the ID of the current container, or "".
func (m *Member) ContainerID() string {
	if c := m.Container(); c != nil {
		return c.GetContainerID()
	}
	return ""
}

// Endpoint is "127.0.0.1:port" of the member's published client port as
// last seen (updated by Restart, Replace and Reconnect).
func (m *Member) Endpoint() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addr
}

// MetricsAddr is "127.0.0.1:port" of the member's published metrics port
// (/metrics, /health) as last seen.
func (m *Member) MetricsAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.metrics
}

// MemberID is etcd's ID of the member (0 until it has answered a Status;
// a Replace gives it a new one).
func (m *Member) MemberID() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.memberID
}

// Config is the command line of the member's current container.
func (m *Member) Config() MemberConfig {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cfg
}

// LogPath is the file the member's output is copied to.
func (m *Member) LogPath() string { return m.logPath }

func (m *Member) container() (*Container, error) {
	if c := m.Container(); c != nil {
		return c, nil
	}
	return nil, ErrNotRunning
}

// create runs a fresh container for the member and follows its output.
func (m *Member) create(ctx context.Context) error {
	if m.cl.closed.Load() {
		return errors.New("cluster closed")
	}
	m.mark("creating container " + m.ContainerName())
	ctr, err := Run(ctx, m.cl.opts.Image, m.cl.memberOpts(m.name, m.id, m.Config())...)
	if ctr != nil {
		m.mu.Lock()
		m.ctr = ctr
		m.mu.Unlock()
		if l := m.base.FollowLogs(ctx, ctr.GetContainerID()); l != nil {
			m.mu.Lock()
			m.logs = l
			m.mu.Unlock()
		}
	}
	if err != nil {
		return err
	}
	if err := m.refreshAddr(ctx); err != nil {
		return err
	}
	m.cl.log.Info("dockeretcd: started", "member", m.name, "container", m.ContainerName(), "id", ctr.GetContainerID()[:12], "client", m.Endpoint())
	return nil
}

// refreshAddr reads the published ports again.
func (m *Member) refreshAddr(ctx context.Context) error {
	c, err := m.container()
	if err != nil {
		return err
	}
	addr, err := c.ClientAddress(ctx)
	if err != nil {
		return err
	}
	metrics, err := c.MetricsAddress(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.addr, m.metrics = addr, metrics
	m.mu.Unlock()
	return nil
}

// remove removes the member's container (and any container of its name)
// and waits until the log copy has ended.
func (m *Member) remove(ctx context.Context) error {
	m.mu.Lock()
	c, logs := m.ctr, m.logs
	m.ctr, m.logs = nil, nil
	m.mu.Unlock()
	var dc *docker.Container
	if c != nil {
		dc = c.Container
	}
	return docker.RemoveMember(ctx, dc, m.ContainerName(), logs)
}

// mark appends a line to the member's log.
func (m *Member) mark(what string) { m.base.Mark(what) }

// client returns the member's own client (one endpoint: its published
// client port), made anew when that port has changed. gRPC's reconnect
// backoff is capped at 1 s so that a restarted member is seen soon.
func (m *Member) client() (*clientv3.Client, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.addr == "" || m.cl.closed.Load() {
		return nil, "", ErrNotRunning
	}
	if m.cli != nil && m.cliAddr == m.addr {
		return m.cli, m.addr, nil
	}
	if m.cli != nil {
		_ = m.cli.Close()
		m.cli = nil
	}
	bc := backoff.DefaultConfig
	bc.MaxDelay = time.Second
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{m.addr},
		Logger:    zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: time.Second}),
		},
	})
	if err != nil {
		return nil, "", fmt.Errorf("client of %s: %w", m.name, err)
	}
	m.cli, m.cliAddr = cli, m.addr
	return cli, m.addr, nil
}

func (m *Member) closeClient() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cli != nil {
		_ = m.cli.Close()
		m.cli, m.cliAddr = nil, ""
	}
}

// Status asks the member for its status (member ID, leader ID, raft term
// and index) through its own client, with a deadline of at most
// DefaultProbeTimeout: a paused member does not answer.
func (m *Member) Status(ctx context.Context) (*clientv3.StatusResponse, error) {
	cli, addr, err := m.client()
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", m.name, err)
	}
	st, err := callStatus(ctx, cli, addr)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", m.name, err)
	}
	if st.Header != nil && st.Header.MemberId != 0 {
		m.mu.Lock()
		m.memberID = st.Header.MemberId
		m.mu.Unlock()
	}
	return st, nil
}

// Health asks GET /health on the member's client port (deadline from ctx,
// or DefaultProbeTimeout): nil if it serves.
func (m *Member) Health(ctx context.Context) error {
	addr := m.Endpoint()
	if addr == "" {
		return fmt.Errorf("health of %s: %w", m.name, ErrNotRunning)
	}
	if err := httpHealth(ctx, addr); err != nil {
		return fmt.Errorf("health of %s: %w", m.name, err)
	}
	return nil
}

// State returns the container's state: running, paused, OOM killed, exit
// code.
func (m *Member) State(ctx context.Context) (State, error) { return m.base.State(ctx) }

// Running reports whether the member's container runs (paused counts).
func (m *Member) Running() bool { return m.base.Running() }

// Paused reports whether the member's container is paused.
func (m *Member) Paused() bool { return m.base.Paused() }

// Pause freezes the member's container (docker pause, the freezer cgroup).
// Its published ports still accept connections but nothing answers.
func (m *Member) Pause() error { return m.base.Pause() }

// Resume thaws a paused container.
func (m *Member) Resume() error { return m.base.Resume() }

// Kill sends SIGKILL to the container (through the engine, thawing it
// first if paused) and waits until it has stopped. The container and its
// data stay; Restart starts it again.
func (m *Member) Kill() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.base.Kill()
}

// Restart starts the member's container again, with the same data (after
// killing it if it still runs), waits until it answers and has a leader,
// and updates its addresses: the engine may publish its ports on other
// host ports.
func (m *Member) Restart(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if err := m.restart(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", m.name, err)
	}
	return nil
}

func (m *Member) restart(ctx context.Context) error {
	if m.cl.closed.Load() {
		return errors.New("cluster closed")
	}
	if err := m.base.StartAgain(ctx); err != nil {
		return err
	}
	if err := m.refreshAddr(ctx); err != nil {
		return err
	}
	m.cl.log.Info("dockeretcd: restarted", "member", m.name, "client", m.Endpoint())
	return m.waitServing(ctx)
}

// Replace replaces the member by a fresh one, the way an operator replaces
// a failed etcd member: it removes the member from the cluster (member
// remove, through the others), removes its container and data, adds a
// member with the same name and peer URL (member add) and starts a new
// container for it with --initial-cluster-state=existing and an empty data
// directory; the new member gets everything from the leader. It waits
// until the new member answers with a leader, and updates its addresses
// and MemberID. A single-member cluster cannot be replaced this way.
func (m *Member) Replace(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if err := m.replace(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", m.name, err)
	}
	m.cl.log.Info("dockeretcd: replaced", "member", m.name, "client", m.Endpoint(), "member_id", fmt.Sprintf("%x", m.MemberID()))
	return nil
}

func (m *Member) replace(ctx context.Context) error {
	if m.cl.closed.Load() {
		return errors.New("cluster closed")
	}
	var others []string
	for _, o := range m.cl.members {
		if o != m && o.Endpoint() != "" {
			others = append(others, o.Endpoint())
		}
	}
	if len(others) == 0 {
		return errors.New("no other member to ask: a single-member cluster cannot replace its member")
	}
	cli, err := NewClient(others...)
	if err != nil {
		return err
	}
	defer cli.Close()
	m.mark("replacing the member with a fresh one (member remove, member add)")

	// Member remove, by the ID the cluster knows for this name.
	var oldID uint64
	err = retry(ctx, func(ctx context.Context) error {
		list, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		oldID = 0
		for _, mem := range list.Members {
			if mem.Name == m.name || (len(mem.PeerURLs) == 1 && mem.PeerURLs[0] == PeerURL(m.name)) {
				oldID = mem.ID
			}
		}
		if oldID == 0 {
			return nil // already gone
		}
		_, err = cli.MemberRemove(ctx, oldID)
		return err
	})
	if err != nil {
		return fmt.Errorf("member remove: %w", err)
	}
	m.cl.log.Info("dockeretcd: member removed", "member", m.name, "member_id", fmt.Sprintf("%x", oldID))
	m.closeClient()
	if err := m.remove(ctx); err != nil {
		return fmt.Errorf("remove old container: %w", err)
	}
	m.mu.Lock()
	m.addr, m.metrics, m.memberID = "", "", 0
	m.mu.Unlock()

	// Member add, then a fresh container that joins the existing cluster.
	var added *clientv3.MemberAddResponse
	err = retry(ctx, func(ctx context.Context) error {
		var err error
		added, err = cli.MemberAdd(ctx, []string{PeerURL(m.name)})
		return err
	})
	if err != nil {
		return fmt.Errorf("member add: %w", err)
	}
	var parts []string
	for _, mem := range added.Members {
		name := mem.Name
		if mem.ID == added.Member.ID {
			name = m.name
		}
		for _, u := range mem.PeerURLs {
			if name != "" {
				parts = append(parts, name+"="+u)
			}
		}
	}
	sort.Strings(parts)
	cfg := m.Config()
	cfg.InitialCluster = strings.Join(parts, ",")
	cfg.ClusterState = StateExisting
	m.mu.Lock()
	m.cfg = cfg
	m.mu.Unlock()
	if err := m.create(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, m.logTail(25))
	}
	return m.waitServing(ctx)
}

// retry calls f with a deadline of 5 s until it succeeds or ctx ends (a
// membership change fails while a leader is being elected).
func retry(ctx context.Context, f func(context.Context) error) error {
	for {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(fctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// LimitCPU limits the live container to cores CPUs (docker update --cpus);
// cores <= 0 lifts the limit (see Container.LimitCPU).
func (m *Member) LimitCPU(cores float64) error { return m.base.LimitCPU(cores) }

// CPULimit returns the container's CPU limit in cores (0: none).
func (m *Member) CPULimit() (float64, error) { return m.base.CPULimit() }

// SetMemoryLimit sets the live container's memory limit in bytes (no
// swap). See Container.SetMemoryLimit for cgroup v1 and v2.
func (m *Member) SetMemoryLimit(bytes int64) error { return m.base.SetMemoryLimit(bytes) }

// SetPidsLimit sets the live container's pids limit (n <= 0: none).
func (m *Member) SetPidsLimit(n int64) error { return m.base.SetPidsLimit(n) }

// Disconnect takes the member off the run's network: its peers lose it,
// and so does the host (it has no other network, so its published ports
// go too). The server keeps running.
func (m *Member) Disconnect(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.base.Disconnect(ctx, m.cl.net.ID)
}

// Reconnect puts the member back on the run's network with its alias and
// updates its addresses (the engine publishes the ports anew, maybe on
// other host ports). The member's address on the network may change too;
// its peers find it by name.
func (m *Member) Reconnect(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	c, err := m.container()
	if err == nil {
		err = c.Connect(ctx, m.cl.net.ID, netip.Addr{}, m.name)
	}
	if err == nil {
		err = m.refreshAddr(ctx)
	}
	if err != nil {
		return fmt.Errorf("reconnect %s: %w", m.name, err)
	}
	m.mark("reconnected to the network")
	m.cl.log.Info("dockeretcd: reconnected", "member", m.name, "client", m.Endpoint())
	return nil
}

// waitServing polls the member's Status until it answers and names a
// leader, its container stops, or ctx ends.
func (m *Member) waitServing(ctx context.Context) error {
	return m.base.WaitFor(ctx, func(ctx context.Context) error {
		s, err := m.Status(ctx)
		if err == nil && s.Leader == 0 {
			err = errors.New("no leader")
		}
		return err
	})
}

// logTail returns the last n lines of the member's log, indented, for
// error messages.
func (m *Member) logTail(n int) string { return m.base.LogTail(n) }
