package zkensemble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// ErrNotRunning is returned when a member has no live process of ours.
var ErrNotRunning = errors.New("not running")

// bindError is what the JVM logs when a port is taken.
const bindError = "Address already in use"

// killWait bounds how long Kill and Close wait for a SIGKILLed JVM to exit.
const killWait = 30 * time.Second

// Member is one ZooKeeper server of an Ensemble. Its exported fields are
// set by Start and must not be changed.
type Member struct {
	ID           int    // myid, 1..N
	Name         string // "zk1"
	ClientAddr   string // 127.0.0.1:port for clients and four-letter words
	AdminAddr    string // 127.0.0.1:port of the AdminServer (/commands/monitor)
	PeerAddr     string // 127.0.0.1:port for followers to talk to the leader
	ElectionAddr string // 127.0.0.1:port for leader election
	Dir          string // Dir/zkN, holds zoo.cfg
	DataDir      string // Dir/zkN/data, holds myid, snapshots and txn logs
	ConfigPath   string // Dir/zkN/zoo.cfg
	Observer     bool   // a non-voting member (peerType=observer)

	ens     *Ensemble
	logPath string

	mu     sync.Mutex
	proc   *proc // the latest process; nil before the first start
	paused bool
}

// proc is one JVM started by this package.
type proc struct {
	cmd       *exec.Cmd
	pid       int
	logOffset int64 // size of the log file when the process started

	// exited is set (under Member.mu) once the process has exited but
	// before it is reaped: while it is false the pid (and its process
	// group) still belongs to our process, so signalling it is safe.
	exited bool
	done   chan struct{} // closed after the process is reaped
	err    error         // cmd.Wait's result, valid after done
}

// LogPath is the file the member's JVM writes its stdout and stderr to.
// Restarts append to it.
func (m *Member) LogPath() string { return m.logPath }

// PID returns the pid of the member's JVM, or 0 if it is not running.
func (m *Member) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil || m.proc.exited {
		return 0
	}
	return m.proc.pid
}

// Running reports whether the member's JVM is alive (paused counts).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil && !m.proc.exited
}

// Paused reports whether the member's JVM was stopped by Pause and not yet
// resumed.
func (m *Member) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused && m.proc != nil && !m.proc.exited
}

// Done returns a channel closed when the current process has exited and
// been reaped, or nil if none was started.
func (m *Member) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	return m.proc.done
}

// Pause stops the member's JVM with SIGSTOP. A paused server still accepts
// TCP connections (the kernel does) but answers nothing.
func (m *Member) Pause() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.signalLocked(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause %s: %w", m.Name, err)
	}
	m.paused = true
	m.ens.log.Info("zkensemble: paused", "member", m.Name, "pid", m.proc.pid)
	return nil
}

// Resume continues a paused JVM with SIGCONT.
func (m *Member) Resume() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.signalLocked(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume %s: %w", m.Name, err)
	}
	m.paused = false
	m.ens.log.Info("zkensemble: resumed", "member", m.Name, "pid", m.proc.pid)
	return nil
}

// Kill sends SIGKILL to the member's process group and waits until the JVM
// has exited.
func (m *Member) Kill() error {
	if err := m.stop(); err != nil {
		return fmt.Errorf("kill %s: %w", m.Name, err)
	}
	return nil
}

// stop SIGCONTs and SIGKILLs the current process and waits for it to be
// reaped. It returns ErrNotRunning if there is no live process.
func (m *Member) stop() error {
	m.mu.Lock()
	p := m.proc
	if p == nil || p.exited {
		m.mu.Unlock()
		return ErrNotRunning
	}
	_ = m.signalLocked(syscall.SIGCONT)
	err := m.signalLocked(syscall.SIGKILL)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("wait for pid %d: still alive %v after SIGKILL", p.pid, killWait)
	}
}

// signalLocked signals the process group of the current process. m.mu must
// be held; the group is only signalled while our process has not exited, so
// the pid cannot have been reused by a process we did not start.
func (m *Member) signalLocked(sig syscall.Signal) error {
	p := m.proc
	if p == nil || p.exited {
		return ErrNotRunning
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("send %v to pid %d: %w", sig, p.pid, err)
	}
	return nil
}

// Restart starts the member again with the same zoo.cfg and data dir (after
// killing it if it still runs) and waits until it serves clients.
func (m *Member) Restart(ctx context.Context) error {
	if m.Running() {
		if err := m.Kill(); err != nil && !errors.Is(err, ErrNotRunning) {
			return fmt.Errorf("restart %s: %w", m.Name, err)
		}
	}
	if err := m.start(); err != nil {
		return fmt.Errorf("restart %s: %w", m.Name, err)
	}
	if err := m.waitServing(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", m.Name, err)
	}
	return nil
}

// start launches the JVM. Its output is appended to the member's log.
func (m *Member) start() error {
	e := m.ens
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.closed.Load() {
		return errors.New("ensemble closed")
	}
	if m.proc != nil && !m.proc.exited {
		return fmt.Errorf("already running as pid %d", m.proc.pid)
	}
	f, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer f.Close() // the child has its own copy
	off, _ := f.Seek(0, io.SeekEnd)
	args := []string{
		"-Xmx" + strconv.Itoa(e.opts.HeapMB) + "m",
		"-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
		"-Dzookeeper.jmx.log4j.disable=true",
	}
	args = append(args, e.opts.JVMArgs...)
	args = append(args, "-cp", e.opts.Classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", m.ConfigPath)
	cmd := exec.Command(e.opts.Java, args...)
	cmd.Dir = m.Dir
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group, so signals go to the JVM alone and a terminal's
	// Ctrl-C does not; SIGKILL if our thread dies so a crashed chaoslab
	// leaks no servers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "=== zkensemble %s: %s %s\n", time.Now().Format(time.RFC3339Nano), m.Name, strings.Join(cmd.Args, " "))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start java: %w", err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, logOffset: off, done: make(chan struct{})}
	m.proc = p
	m.paused = false
	e.log.Info("zkensemble: started", "member", m.Name, "pid", p.pid, "client", m.ClientAddr, "log", m.logPath)
	go m.reap(p)
	return nil
}

// reap waits for p to exit, marks it exited while it is still a zombie (so
// nobody signals a reused pid), then reaps it and publishes the result.
func (m *Member) reap(p *proc) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	m.mu.Lock()
	p.exited = true
	if m.proc == p {
		m.paused = false
	}
	m.mu.Unlock()
	err := p.cmd.Wait()
	p.err = err
	if f, ferr := os.OpenFile(m.logPath, os.O_WRONLY|os.O_APPEND, 0); ferr == nil {
		fmt.Fprintf(f, "=== zkensemble %s: %s pid %d exited: %v\n", time.Now().Format(time.RFC3339Nano), m.Name, p.pid, exitString(err))
		f.Close()
	}
	m.ens.log.Info("zkensemble: exited", "member", m.Name, "pid", p.pid, "status", exitString(err))
	close(p.done)
}

func exitString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// exitedErr returns the exit error of the current process if it has exited.
func (m *Member) exitedErr() (bool, error) {
	m.mu.Lock()
	p := m.proc
	m.mu.Unlock()
	if p == nil {
		return true, ErrNotRunning
	}
	select {
	case <-p.done:
		return true, fmt.Errorf("exited: %s", exitString(p.err))
	default:
		return false, nil
	}
}

// FourLetter sends a four-letter word ("ruok", "srvr", "stat", "cons", ...)
// to the member's client port and returns the answer. The deadline comes
// from ctx, or DefaultProbeTimeout if ctx has none.
func (m *Member) FourLetter(ctx context.Context, cmd string) (string, error) {
	out, err := zkcheck.FourLetter(ctx, m.ClientAddr, cmd)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", m.Name, err)
	}
	return out, nil
}

// Mntr returns the member's `mntr` answer as a map (zk_server_state,
// zk_version, zk_outstanding_requests, ...). A server that answers but does
// not serve gives an error wrapping ErrNotServing.
func (m *Member) Mntr(ctx context.Context) (map[string]string, error) {
	out, err := zkcheck.FourLetter(ctx, m.ClientAddr, "mntr")
	if err != nil {
		return nil, fmt.Errorf("mntr %s: %w", m.Name, err)
	}
	kv, err := zkcheck.ParseMntr(out)
	if err != nil {
		return nil, fmt.Errorf("mntr %s: %w", m.Name, err)
	}
	return kv, nil
}

// State returns the member's zk_server_state (leader, follower, standalone).
func (m *Member) State(ctx context.Context) (string, error) {
	kv, err := m.Mntr(ctx)
	if err != nil {
		return "", err
	}
	return kv["zk_server_state"], nil
}

// Version returns the running member's zk_version without the build date,
// e.g. "3.8.0-${mvngit.commit.id}" for Debian's build.
func (m *Member) Version(ctx context.Context) (string, error) {
	kv, err := m.Mntr(ctx)
	if err != nil {
		return "", err
	}
	v, _, _ := strings.Cut(kv["zk_version"], ", built on")
	return strings.TrimSpace(v), nil
}

// waitServing polls mntr until the member serves clients, its process
// exits, or ctx ends.
func (m *Member) waitServing(ctx context.Context) error {
	var last error
	for {
		if exited, err := m.exitedErr(); exited {
			return fmt.Errorf("wait for %s: %w\n%s", m.Name, err, m.logTail(30))
		}
		// A server that cannot bind may keep running (or retry) without
		// ever serving: give up at once so that Start can pick new ports.
		if m.logContains(bindError) {
			return fmt.Errorf("wait for %s: %w\n%s", m.Name, errPortInUse, m.logTail(30))
		}
		pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
		st, err := m.State(pctx)
		cancel()
		if err == nil && zkcheck.Serving(st) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("state %q", st)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %v)\n%s", m.Name, ctx.Err(), last, m.logTail(30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// logTail returns the last n lines the current process wrote to the log,
// indented, for error messages.
func (m *Member) logTail(n int) string {
	m.mu.Lock()
	var off int64
	if m.proc != nil {
		off = m.proc.logOffset
	}
	m.mu.Unlock()
	b, err := readFrom(m.logPath, off, 64*1024)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + m.Name + " log tail (" + m.logPath + "):\n    " + strings.Join(lines, "\n    ")
}

// logContains reports whether the current process's log contains s.
func (m *Member) logContains(s string) bool {
	m.mu.Lock()
	var off int64
	if m.proc != nil {
		off = m.proc.logOffset
	}
	m.mu.Unlock()
	b, err := readFrom(m.logPath, off, 1<<20)
	return err == nil && bytes.Contains(b, []byte(s))
}

// readFrom reads the file from off, at most the last max bytes.
func readFrom(path string, off, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size()-off > max {
		off = st.Size() - max
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
