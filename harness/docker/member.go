package docker

// What the backends' cluster members (dockerzk.Member, dockeretcd.Member,
// dockerconsul.Node) and clusters share: the live faults on a member's
// current container, its log marks and tail, and the start and close
// skeletons of a cluster.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
)

// ErrNotRunning is returned when a member has no running container.
var ErrNotRunning = errors.New("not running")

// OpTimeout bounds the member operations that take no context.
const OpTimeout = 30 * time.Second

// Member is the part of a backend's cluster member that deals only with
// its current container. Errors read "verb noun of NAME: ...", marks are
// appended to LogPath and messages go to Log, both naming Prefix.
type Member struct {
	Name    string // short name and network alias, "zk1"
	LogPath string // the file the container's output is copied to
	Prefix  string // the backend, "dockerzk"
	Key     string // the log attribute that holds Name: "member", "node"
	Log     *slog.Logger
	// Container returns the current container, or an error
	// (ErrNotRunning) when there is none.
	Container func() (*Container, error)
}

// Base returns c itself; through embedding it gives the backends'
// container types (dockerzk.Container, ...) their docker.Container.
func (c *Container) Base() *Container { return c }

// Current adapts a backend member's Container method (the current
// container, or nil) to Member.Container.
func Current[C interface {
	comparable
	Base() *Container
}](get func() C) func() (*Container, error) {
	return func() (*Container, error) {
		var none C
		if c := get(); c != none {
			return c.Base(), nil
		}
		return nil, ErrNotRunning
	}
}

// info logs msg at info level with the backend's prefix and the member.
func (m *Member) info(msg string, args ...any) {
	m.Log.Info(m.Prefix+": "+msg, append([]any{m.Key, m.Name}, args...)...)
}

// Mark appends a line to the member's log.
func (m *Member) Mark(what string) {
	if f, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "=== chaoslab %s %s: %s %s\n", m.Prefix, time.Now().Format(time.RFC3339Nano), m.Name, what)
		f.Close()
	}
}

// LogTail returns the last n lines of the member's log, indented, for
// error messages.
func (m *Member) LogTail(n int) string {
	b, err := readTail(m.LogPath, 64*1024)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + m.Name + " log tail (" + m.LogPath + "):\n    " + strings.Join(lines, "\n    ")
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

// FollowLogs starts copying the output of container id to LogPath. If it
// cannot, it logs a warning and returns nil.
func (m *Member) FollowLogs(ctx context.Context, id string) *LogFollower {
	l, err := FollowLogs(ctx, id, m.LogPath)
	if err != nil {
		m.Log.Warn(m.Prefix+": cannot follow logs", m.Key, m.Name, "err", err)
		return nil
	}
	return l
}

// State returns the container's state: running, paused, OOM killed, exit
// code.
func (m *Member) State(ctx context.Context) (State, error) {
	c, err := m.Container()
	if err != nil {
		return State{}, fmt.Errorf("state of %s: %w", m.Name, err)
	}
	st, err := c.RunState(ctx)
	if err != nil {
		return State{}, fmt.Errorf("state of %s: %w", m.Name, err)
	}
	return st, nil
}

// quickState is State with a deadline of 5 s.
func (m *Member) quickState() (State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.State(ctx)
}

// Running reports whether the container runs (paused counts).
func (m *Member) Running() bool {
	st, err := m.quickState()
	return err == nil && st.Running
}

// Paused reports whether the container is paused.
func (m *Member) Paused() bool {
	st, err := m.quickState()
	return err == nil && st.Paused
}

// OOMKilled reports whether the container has stopped because the
// kernel's OOM killer killed its PID 1 (false again once it runs).
func (m *Member) OOMKilled() bool {
	st, err := m.quickState()
	return err == nil && st.OOMKilled && !st.Running
}

// do runs op on the current container with a deadline of OpTimeout and
// wraps its error as "what NAME: ...".
func (m *Member) do(what string, op func(*Container, context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	c, err := m.Container()
	if err == nil {
		err = op(c, ctx)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, m.Name, err)
	}
	return nil
}

// Pause freezes the container (Container.Pause).
func (m *Member) Pause() error {
	if err := m.do("pause", (*Container).Pause); err != nil {
		return err
	}
	m.Mark("paused")
	m.info("paused")
	return nil
}

// Resume thaws a paused container.
func (m *Member) Resume() error {
	if err := m.do("resume", (*Container).Unpause); err != nil {
		return err
	}
	m.Mark("resumed")
	m.info("resumed")
	return nil
}

// Kill sends SIGKILL to the running container and waits until it has
// stopped (Container.Kill), within OpTimeout and 5 s.
func (m *Member) Kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout+5*time.Second)
	defer cancel()
	if err := m.kill(ctx); err != nil {
		return fmt.Errorf("kill %s: %w", m.Name, err)
	}
	return nil
}

// kill is Kill without the deadline and the name in the error; it
// returns ErrNotRunning if the container does not run.
func (m *Member) kill(ctx context.Context) error {
	c, err := m.Container()
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
	m.Mark("killed (SIGKILL)")
	m.info("killed")
	return nil
}

// StartAgain starts the same container again (after killing it if it
// still runs); a failed start's error carries the log tail.
func (m *Member) StartAgain(ctx context.Context) error {
	c, err := m.Container()
	if err != nil {
		return err
	}
	if err := m.kill(ctx); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	m.Mark("starting the container again")
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("%w\n%s", err, m.LogTail(25))
	}
	return nil
}

// LimitCPU limits the live container to cores CPUs; cores <= 0 lifts the
// limit (Container.LimitCPU).
func (m *Member) LimitCPU(cores float64) error {
	if err := m.do("limit cpu of", func(c *Container, ctx context.Context) error { return c.LimitCPU(ctx, cores) }); err != nil {
		return err
	}
	m.Mark(fmt.Sprintf("cpu limit %.2f cores (0: none)", cores))
	m.info("cpu limit", "cores", cores)
	return nil
}

// CPULimit returns the container's CPU limit in cores (0: none).
func (m *Member) CPULimit() (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	c, err := m.Container()
	if err != nil {
		return 0, fmt.Errorf("read cpu limit of %s: %w", m.Name, err)
	}
	return c.CPULimit(ctx)
}

// MemoryLimit returns the container's memory limit in bytes (0: none).
func (m *Member) MemoryLimit() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	c, err := m.Container()
	if err != nil {
		return 0, fmt.Errorf("read memory limit of %s: %w", m.Name, err)
	}
	return c.MemoryLimit(ctx)
}

// SetMemoryLimit sets the live container's memory limit in bytes, no swap
// (Container.SetMemoryLimit).
func (m *Member) SetMemoryLimit(bytes int64) error {
	if err := m.do("limit memory of", func(c *Container, ctx context.Context) error { return c.SetMemoryLimit(ctx, bytes) }); err != nil {
		return err
	}
	m.Mark(fmt.Sprintf("memory limit %d bytes", bytes))
	m.info("memory limit", "bytes", bytes)
	return nil
}

// SetPidsLimit sets the live container's pids limit (n <= 0: none).
func (m *Member) SetPidsLimit(n int64) error {
	if err := m.do("limit pids of", func(c *Container, ctx context.Context) error { return c.SetPidsLimit(ctx, n) }); err != nil {
		return err
	}
	m.Mark(fmt.Sprintf("pids limit %d", n))
	return nil
}

// Disconnect takes the container off the network (name or ID).
func (m *Member) Disconnect(ctx context.Context, network string) error {
	c, err := m.Container()
	if err == nil {
		err = c.Disconnect(ctx, network)
	}
	if err != nil {
		return fmt.Errorf("disconnect %s: %w", m.Name, err)
	}
	m.Mark("disconnected from the network")
	m.info("disconnected")
	return nil
}

// WaitFor polls ready (every 200 ms) until it returns nil, the container
// stops, or ctx ends. The errors carry the log tail.
func (m *Member) WaitFor(ctx context.Context, ready func(context.Context) error) error {
	var last error
	for {
		st, err := m.State(ctx)
		if err == nil && !st.Running {
			return fmt.Errorf("wait for %s: container stopped: exit code %d, OOM killed %v\n%s", m.Name, st.ExitCode, st.OOMKilled, m.LogTail(30))
		}
		if err = ready(ctx); err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)\n%s", m.Name, ctx.Err(), last, m.LogTail(30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RemoveMember removes a member's container c (if not nil; thawed first
// if paused) and any container called name, then waits until the log copy
// (if not nil) has ended.
func RemoveMember(ctx context.Context, c *Container, name string, logs *LogFollower) error {
	var errs []error
	if c != nil {
		if st, err := c.RunState(ctx); err == nil && st.Paused {
			_ = c.Unpause(ctx)
		}
		if err := c.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil && !IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := RemoveByName(ctx, name); err != nil {
		errs = append(errs, err)
	}
	if logs != nil {
		if err := logs.Wait(5 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("copy logs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// RemoveByName force-removes a container (and its anonymous volumes) by
// name; a missing one is fine.
func RemoveByName(ctx context.Context, name string) error {
	cli, err := Client(ctx)
	if err != nil {
		return err
	}
	_, err = cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// Named is a cluster member: RemoveAll and CreateAll name it in errors.
type Named interface{ Name() string }

// CreateAll runs create for every member at the same time and returns the
// members it failed for with the joined errors ("run NAME: ...").
func CreateAll[M Named](ctx context.Context, members []M, create func(M, context.Context) error) ([]M, error) {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			if err := create(m, ctx); err != nil {
				errs[i] = fmt.Errorf("run %s: %w", m.Name(), err)
			}
		})
	}
	wg.Wait()
	var bad []M
	for i, err := range errs {
		if err != nil {
			bad = append(bad, members[i])
		}
	}
	return bad, errors.Join(errs...)
}

// RemoveAll runs remove for every member at the same time, then removes
// the network (if not nil), and joins the errors ("remove NAME: ...").
func RemoveAll[M Named](ctx context.Context, net *testcontainers.DockerNetwork, members []M, remove func(M, context.Context) error) error {
	errs := make([]error, len(members)+1)
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() {
			if err := remove(m, ctx); err != nil {
				errs[i] = fmt.Errorf("remove %s: %w", m.Name(), err)
			}
		})
	}
	wg.Wait()
	if net != nil {
		if err := net.Remove(ctx); err != nil && !IsNotFound(err) {
			errs[len(members)] = fmt.Errorf("remove network %s: %w", net.Name, err)
		}
	}
	return errors.Join(errs...)
}

// FailStart is the error of a failed cluster start: err, with close's
// error (the clean-up) and the tails of the bad members' logs.
func FailStart[M any](err error, bad []M, tail func(M) string, close func() error) error {
	var tails []string
	for _, m := range bad {
		tails = append(tails, tail(m))
	}
	if cerr := close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("clean up: %w", cerr))
	}
	if len(tails) > 0 {
		err = fmt.Errorf("%w\n%s", err, strings.Join(tails, "\n"))
	}
	return err
}

// LogDir returns dir, created if missing; dir "" gives a new directory
// under os.TempDir() whose name starts with prefix.
func LogDir(dir, prefix string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", fmt.Errorf("create log dir: %w", err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create log dir: %w", err)
	}
	return dir, nil
}

// NewNetwork creates a bridge network labelled for run runID and the
// component.
func NewNetwork(ctx context.Context, runID, component string) (*testcontainers.DockerNetwork, error) {
	net, err := network.New(ctx, network.WithLabels(MergeLabels(Labels(runID), map[string]string{LabelComponent: component})))
	if err != nil {
		return nil, fmt.Errorf("create network: %w", err)
	}
	return net, nil
}

// SlogPrintf returns a testcontainers-go logger that sends its messages
// to l at debug level.
func SlogPrintf(l *slog.Logger) tclog.Logger { return printfLogger{l} }

type printfLogger struct{ l *slog.Logger }

func (p printfLogger) Printf(format string, args ...any) {
	p.l.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "testcontainers")
}
