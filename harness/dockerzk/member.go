package dockerzk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

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
var ErrNotRunning = errors.New("not running")

// opTimeout bounds the member methods that take no context.
const opTimeout = 30 * time.Second

// Member is one ZooKeeper server container of an Ensemble.
type Member struct {
	id      int
	name    string
	ens     *Ensemble
	logPath string

	opMu sync.Mutex // serialises Kill, Restart, Replace, Disconnect, Reconnect

	mu   sync.Mutex
	ctr  *Container // nil before the first create and after remove
	addr string     // 127.0.0.1:port of the client port, "" if unknown
	logs *docker.LogFollower
}

// ID is the member's myid (1..N).
func (m *Member) ID() int { return m.id }

// Name is the member's short name and network alias, "zk1".
func (m *Member) Name() string { return m.name }

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
func (m *Member) create(ctx context.Context) error {
	if m.ens.closed.Load() {
		return errors.New("ensemble closed")
	}
	m.mark("creating container " + m.ContainerName())
	ctr, err := Run(ctx, m.ens.opts.Image, m.ens.memberOpts(m.id)...)
	if ctr != nil {
		m.mu.Lock()
		m.ctr = ctr
		m.mu.Unlock()
		if l, ferr := docker.FollowLogs(ctx, ctr.GetContainerID(), m.logPath); ferr == nil {
			m.mu.Lock()
			m.logs = l
			m.mu.Unlock()
		} else {
			m.ens.log.Warn("dockerzk: cannot follow logs", "member", m.name, "err", ferr)
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
	var errs []error
	if c != nil {
		if st, err := c.RunState(ctx); err == nil && st.Paused {
			_ = c.Unpause(ctx)
		}
		if err := c.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil && !docker.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := removeByName(ctx, m.ContainerName()); err != nil {
		errs = append(errs, err)
	}
	if logs != nil {
		if err := logs.Wait(5 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("copy logs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// mark appends a line to the member's log.
func (m *Member) mark(what string) {
	if f, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "=== chaoslab dockerzk %s: %s %s\n", time.Now().Format(time.RFC3339Nano), m.name, what)
		f.Close()
	}
}

// State returns the container's state: running, paused, OOM killed, exit
// code.
func (m *Member) State(ctx context.Context) (State, error) {
	c, err := m.container()
	if err != nil {
		return State{}, fmt.Errorf("state of %s: %w", m.name, err)
	}
	st, err := c.RunState(ctx)
	if err != nil {
		return State{}, fmt.Errorf("state of %s: %w", m.name, err)
	}
	return st, nil
}

func (m *Member) quickState() (State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.State(ctx)
}

// Running reports whether the member's container runs (paused counts).
func (m *Member) Running() bool {
	st, err := m.quickState()
	return err == nil && st.Running
}

// Paused reports whether the member's container is paused.
func (m *Member) Paused() bool {
	st, err := m.quickState()
	return err == nil && st.Paused
}

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
func (m *Member) Pause() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := m.container()
	if err == nil {
		err = c.Pause(ctx)
	}
	if err != nil {
		return fmt.Errorf("pause %s: %w", m.name, err)
	}
	m.mark("paused")
	m.ens.log.Info("dockerzk: paused", "member", m.name)
	return nil
}

// Resume thaws a paused container.
func (m *Member) Resume() error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := m.container()
	if err == nil {
		err = c.Unpause(ctx)
	}
	if err != nil {
		return fmt.Errorf("resume %s: %w", m.name, err)
	}
	m.mark("resumed")
	m.ens.log.Info("dockerzk: resumed", "member", m.name)
	return nil
}

// Kill sends SIGKILL to the container (through the engine, thawing it
// first if paused) and waits until it has stopped. The container and its
// data stay; Restart starts it again.
func (m *Member) Kill() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout+5*time.Second)
	defer cancel()
	if err := m.kill(ctx); err != nil {
		return fmt.Errorf("kill %s: %w", m.name, err)
	}
	return nil
}

func (m *Member) kill(ctx context.Context) error {
	c, err := m.container()
	if err != nil {
		return err
	}
	st, err := c.RunState(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return ErrNotRunning
	}
	if err := c.Kill(ctx); err != nil {
		return err
	}
	m.ens.log.Info("dockerzk: killed", "member", m.name)
	return nil
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
	c, err := m.container()
	if err != nil {
		return err
	}
	if err := m.kill(ctx); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	m.mark("starting the container again")
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, m.logTail(25))
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
// the leader), waits until it serves and updates its client address.
func (m *Member) Replace(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	if m.ens.closed.Load() {
		return fmt.Errorf("replace %s: ensemble closed", m.name)
	}
	m.mark("replacing the container with a fresh one")
	if err := m.remove(ctx); err != nil {
		return fmt.Errorf("replace %s: remove old container: %w", m.name, err)
	}
	m.mu.Lock()
	m.addr = ""
	m.mu.Unlock()
	if err := m.create(ctx); err != nil {
		return fmt.Errorf("replace %s: %w\n%s", m.name, err, m.logTail(25))
	}
	if err := m.waitServing(ctx); err != nil {
		return fmt.Errorf("replace %s: %w", m.name, err)
	}
	m.ens.log.Info("dockerzk: replaced", "member", m.name, "client", m.ClientAddr())
	return nil
}

// LimitCPU limits the live container to cores CPUs (docker update --cpus);
// cores <= 0 lifts the limit (see Container.LimitCPU).
func (m *Member) LimitCPU(cores float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := m.container()
	if err == nil {
		err = c.LimitCPU(ctx, cores)
	}
	if err != nil {
		return fmt.Errorf("limit cpu of %s: %w", m.name, err)
	}
	m.mark(fmt.Sprintf("cpu limit %.2f cores (0: none)", cores))
	m.ens.log.Info("dockerzk: cpu limit", "member", m.name, "cores", cores)
	return nil
}

// CPULimit returns the container's CPU limit in cores (0: none).
func (m *Member) CPULimit() (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := m.container()
	if err != nil {
		return 0, fmt.Errorf("read cpu limit of %s: %w", m.name, err)
	}
	return c.CPULimit(ctx)
}

// SetMemoryLimit sets the live container's memory limit in bytes (no
// swap). See Container.SetMemoryLimit for cgroup v1 and v2.
func (m *Member) SetMemoryLimit(bytes int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := m.container()
	if err == nil {
		err = c.SetMemoryLimit(ctx, bytes)
	}
	if err != nil {
		return fmt.Errorf("limit memory of %s: %w", m.name, err)
	}
	m.mark(fmt.Sprintf("memory limit %d bytes", bytes))
	return nil
}

// SetPidsLimit sets the live container's pids limit (n <= 0: none).
func (m *Member) SetPidsLimit(n int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := m.container()
	if err == nil {
		err = c.SetPidsLimit(ctx, n)
	}
	if err != nil {
		return fmt.Errorf("limit pids of %s: %w", m.name, err)
	}
	m.mark(fmt.Sprintf("pids limit %d", n))
	return nil
}

// Disconnect takes the member off the run's network: its peers lose it,
// and so does the host (it has no other network, so its published port
// goes too). The server keeps running.
func (m *Member) Disconnect(ctx context.Context) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	c, err := m.container()
	if err == nil {
		err = c.Disconnect(ctx, m.ens.net.ID)
	}
	if err != nil {
		return fmt.Errorf("disconnect %s: %w", m.name, err)
	}
	m.mark("disconnected from the network")
	m.ens.log.Info("dockerzk: disconnected", "member", m.name)
	return nil
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
	var last error
	for {
		st, err := m.State(ctx)
		if err == nil && !st.Running {
			return fmt.Errorf("wait for %s: container stopped: exit code %d, OOM killed %v\n%s", m.name, st.ExitCode, st.OOMKilled, m.logTail(30))
		}
		pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
		zs, err := m.ServerState(pctx)
		cancel()
		if err == nil && zkcheck.Serving(zs) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("state %q", zs)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)\n%s", m.name, ctx.Err(), last, m.logTail(30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logTail returns the last n lines of the member's log, indented, for
// error messages.
func (m *Member) logTail(n int) string {
	b, err := readTail(m.logPath, 64*1024)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + m.name + " log tail (" + m.logPath + "):\n    " + strings.Join(lines, "\n    ")
}

// readTail reads at most the last max bytes of a file.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := st.Size() - max; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}
