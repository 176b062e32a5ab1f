package dockerzk

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/zkcheck"
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

// Member is one ZooKeeper server container of an Ensemble.
type Member struct {
	id      int
	name    string
	ens     *Ensemble
	logPath string
	base    docker.Member // the container faults, marks and log tail

	opMu sync.Mutex // serialises Kill, Restart, Replace, Disconnect, Reconnect

	mu   sync.Mutex
	ctr  *Container // nil before the first create and after remove
	addr string     // 127.0.0.1:port of the client port, "" if unknown
	logs *docker.LogFollower
}

// newMember returns member id of the ensemble, without a container yet.
func newMember(e *Ensemble, id int) *Member {
	m := &Member{id: id, name: MemberName(id), ens: e, logPath: filepath.Join(e.opts.LogDir, MemberName(id)+".log")}
	m.base = docker.Member{
		Name: m.name, LogPath: m.logPath, Prefix: "dockerzk", Key: "member", Log: e.log,
		Container: docker.Current(m.Container),
	}
	return m
}

// ID is the member's myid (1..N).
func (m *Member) ID() int { return m.id }

// Name is the member's short name and network alias, "zk1".
func (m *Member) Name() string { return m.name }

// Observer reports whether the member is a non-voting one (peerType=observer).
func (m *Member) Observer() bool { return m.ens != nil && m.id > m.ens.opts.Servers }

// ContainerName is "<RunID>-zkN".
func (m *Member) ContainerName() string { return ContainerName(m.ens.opts.RunID, m.id) }

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

// ClientAddr is "127.0.0.1:port" of the member's published client port as
// last seen (updated by Restart, Replace and Reconnect).
func (m *Member) ClientAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addr
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
func (m *Member) create(ctx context.Context) error { return m.createWith(ctx) }

// createWith is create with extra options after the ensemble's.
func (m *Member) createWith(ctx context.Context, extra ...testcontainers.ContainerCustomizer) error {
	if m.ens.closed.Load() {
		return errors.New("ensemble closed")
	}
	m.mark("creating container " + m.ContainerName())
	ctr, err := Run(ctx, m.ens.opts.Image, append(m.ens.memberOpts(m.id), extra...)...)
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
	m.ens.log.Info("dockerzk: started", "member", m.name, "container", m.ContainerName(), "id", ctr.GetContainerID()[:12], "client", m.ClientAddr())
	return nil
}

// refreshAddr reads the published client port again.
func (m *Member) refreshAddr(ctx context.Context) error {
	c, err := m.container()
	if err != nil {
		return err
	}
	addr, err := c.ClientAddress(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.addr = addr
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

// State returns the container's state: running, paused, OOM killed, exit
// code.
func (m *Member) State(ctx context.Context) (State, error) { return m.base.State(ctx) }

// Running reports whether the member's container runs (paused counts).
func (m *Member) Running() bool { return m.base.Running() }

// Paused reports whether the member's container is paused.
func (m *Member) Paused() bool { return m.base.Paused() }

// FourLetter sends a four-letter word ("ruok", "srvr", "cons", ...) to the
// member's published client port. The deadline comes from ctx, or
// DefaultProbeTimeout if ctx has none: a paused member does not answer.
func (m *Member) FourLetter(ctx context.Context, cmd string) (string, error) {
	addr := m.ClientAddr()
	if addr == "" {
		return "", fmt.Errorf("ask %s: %w", m.name, ErrNotRunning)
	}
	out, err := zkcheck.FourLetter(ctx, addr, cmd)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", m.name, err)
	}
	return out, nil
}

// Mntr returns the member's mntr answer as a map (zk_server_state,
// zk_version, zk_outstanding_requests, ...). A server that answers but does
// not serve gives an error wrapping ErrNotServing.
func (m *Member) Mntr(ctx context.Context) (map[string]string, error) {
	out, err := m.FourLetter(ctx, "mntr")
	if err != nil {
		return nil, fmt.Errorf("mntr %s: %w", m.name, err)
	}
	kv, err := zkcheck.ParseMntr(out)
	if err != nil {
		return nil, fmt.Errorf("mntr %s: %w", m.name, err)
	}
	return kv, nil
}

// ServerState returns the member's zk_server_state (leader, follower,
// standalone).
func (m *Member) ServerState(ctx context.Context) (string, error) {
	kv, err := m.Mntr(ctx)
	if err != nil {
		return "", err
	}
	return kv["zk_server_state"], nil
}

// Version returns the running member's zk_version without the build date.
func (m *Member) Version(ctx context.Context) (string, error) {
	kv, err := m.Mntr(ctx)
	if err != nil {
		return "", err
	}
	return versionOf(kv), nil
}

// Pause freezes the member's container (docker pause, the freezer cgroup).
// Its published port still accepts connections but nothing answers.
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
// killing it if it still runs), waits until it serves clients and updates
// its client address: the engine may publish it on another host port.
func (m *Member) Restart(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if err := m.restart(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", m.name, err)
	}
	return nil
}

func (m *Member) restart(ctx context.Context) error {
	if m.ens.closed.Load() {
		return errors.New("ensemble closed")
	}
	if err := m.base.StartAgain(ctx); err != nil {
		return err
	}
	if err := m.refreshAddr(ctx); err != nil {
		return err
	}
	m.ens.log.Info("dockerzk: restarted", "member", m.name, "client", m.ClientAddr())
	return m.waitServing(ctx)
}

// Replace stops and removes the member's container and starts a fresh one
// with the same id, name, alias and settings but an empty data directory
// (one step of a rolling replacement: the new server syncs everything from
// the leader), waits until it serves and updates its client address. The
// new container starts under the old one's CPU limit.
func (m *Member) Replace(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if err := m.replace(ctx); err != nil {
		return err
	}
	if err := m.waitServing(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", m.name, err)
	}
	m.ens.log.Info("dockerzk: replaced, serving", "member", m.name, "client", m.ClientAddr())
	return nil
}

// ReplaceStarted is Replace returning as soon as the fresh server answers
// ruok, before it has synced with the leader (as harness/zkensemble's
// Replace returns once the process is started): what comes next, a
// procedure's gate, is the caller's.
func (m *Member) ReplaceStarted(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.replace(ctx)
}

// replace removes the container and creates a fresh one under the old
// one's CPU limit (a data directory inside the container, and any
// anonymous volume, go with the old one); it returns once ruok answers.
func (m *Member) replace(ctx context.Context) error {
	if m.ens.closed.Load() {
		return fmt.Errorf("replace %s: ensemble closed", m.name)
	}
	var extra []testcontainers.ContainerCustomizer
	if cores, err := m.CPULimit(); err == nil && cores > 0 {
		extra = append(extra, WithCPULimit(cores))
	}
	m.mark("replacing the container with a fresh one")
	if err := m.remove(ctx); err != nil {
		return fmt.Errorf("replace %s: remove old container: %w", m.name, err)
	}
	m.mu.Lock()
	m.addr = ""
	m.mu.Unlock()
	if err := m.createWith(ctx, extra...); err != nil {
		return fmt.Errorf("replace %s: %w\n%s", m.name, err, m.logTail(25))
	}
	m.ens.log.Info("dockerzk: replaced with an empty data dir", "member", m.name, "client", m.ClientAddr())
	return nil
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
// and so does the host (it has no other network, so its published port
// goes too). The server keeps running.
func (m *Member) Disconnect(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.base.Disconnect(ctx, m.ens.net.ID)
}

// Reconnect puts the member back on the run's network with its alias and
// updates its client address (the engine publishes the port anew, maybe on
// another host port).
func (m *Member) Reconnect(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	c, err := m.container()
	if err == nil {
		err = c.Connect(ctx, m.ens.net.ID, m.name)
	}
	if err == nil {
		err = m.refreshAddr(ctx)
	}
	if err != nil {
		return fmt.Errorf("reconnect %s: %w", m.name, err)
	}
	m.mark("reconnected to the network")
	m.ens.log.Info("dockerzk: reconnected", "member", m.name, "client", m.ClientAddr())
	return nil
}

// waitServing polls mntr until the member serves clients, its container
// stops, or ctx ends.
func (m *Member) waitServing(ctx context.Context) error {
	return m.base.WaitFor(ctx, func(ctx context.Context) error {
		pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
		defer cancel()
		zs, err := m.ServerState(pctx)
		if err == nil && !zkcheck.Serving(zs) {
			err = fmt.Errorf("state %q", zs)
		}
		return err
	})
}

// logTail returns the last n lines of the member's log, indented, for
// error messages.
func (m *Member) logTail(n int) string { return m.base.LogTail(n) }
