package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Start runs a program in a cgroup of its own with its limits.
func (s *Site) Start(_ context.Context, prog lab.Program) (lab.Proc, error) {
	argv, err := s.argv(prog)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(prog.Files); err != nil {
		return nil, fmt.Errorf("start %s: %w", prog.Name, err)
	}
	s.asked(prog.Limits)
	g, err := s.mgr.NewGroup(prog.Name, limits.Limits{
		MemoryBytes: int64(prog.Limits.MemoryMB) << 20, PidsMax: int64(prog.Limits.Pids), CPUCores: prog.Limits.CPUCores,
	})
	if err != nil {
		return nil, fmt.Errorf("create cgroup: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "GOTRACEBACK=single"), prog.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = prog.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = g.Delete()
		return nil, fmt.Errorf("pipe output of %s: %w", prog.Name, err)
	}
	if err := g.Start(cmd); err != nil {
		_ = g.Delete()
		return nil, fmt.Errorf("start %s: %w", prog.Name, err)
	}
	p := &proc{cmd: cmd, g: g, started: time.Now(), done: make(chan struct{})}
	go p.wait(out, prog.Stdout)
	s.mu.Lock()
	s.procs = append(s.procs, p)
	onStart := s.onStart
	s.mu.Unlock()
	if onStart != nil {
		onStart(prog, p)
	}
	return p, nil
}

// writeFiles writes a program's files where it will read them.
func writeFiles(files map[string]string) error {
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// argv is the command line: chaoslab's own agent, or the program's command.
func (s *Site) argv(prog lab.Program) ([]string, error) {
	if prog.Agent == "" {
		if len(prog.Command) == 0 {
			return nil, fmt.Errorf("start %s: no agent and no command", prog.Name)
		}
		return prog.Command, nil
	}
	args, err := prog.AgentArgs()
	if err != nil {
		return nil, err
	}
	o := s.p.opts
	argv := append([]string{o.AgentBinary}, o.AgentArgs...)
	return append(argv, args...), nil
}

// proc is a process in its cgroup.
type proc struct {
	cmd *exec.Cmd
	g   *limits.Group
	// netGroup is the cgroup v2 group its sockets are told by (netcut),
	// "" when it is its own group or none.
	netGroup string
	started  time.Time
	done     chan struct{}
	exit     lab.ProcExit

	mu       sync.Mutex
	stats    lab.ProcStats
	stopping bool
	released bool
}

func (p *proc) wait(out io.Reader, onLine func([]byte)) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if onLine != nil {
			onLine(sc.Bytes())
		}
	}
	werr := p.cmd.Wait()
	st, _ := p.g.Stats()
	p.mu.Lock()
	p.readStats(st)
	stopped := p.stopping
	p.mu.Unlock()
	p.exit = describeExit(werr, p.cmd.ProcessState, st, p.cmd.Process.Pid, p.started, stopped)
	close(p.done)
}

func (p *proc) Desc() string { return fmt.Sprintf("pid %d", p.cmd.Process.Pid) }
func (p *proc) Pid() int     { return p.cmd.Process.Pid }
func (p *proc) Host() string { return "127.0.0.1" }

// Signal signals the process group the program leads (only processes the
// lab started).
func (p *proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Pause stops the program: its process group and every process of its
// cgroup (a server that made a session of its own, as PostgreSQL's
// postmaster does, keeps its backends in its cgroup, not its group).
func (p *proc) Pause() error  { return p.signalAll(syscall.SIGSTOP) }
func (p *proc) Resume() error { return p.signalAll(syscall.SIGCONT) }

// signalAll signals the process group and every process of the cgroup
// (all of them descendants of what the lab started).
func (p *proc) signalAll(sig syscall.Signal) error {
	if err := p.Signal(sig); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	pids, err := p.g.Procs()
	if err != nil {
		return nil // no cgroup to read: the group was signalled
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return nil
}

// Stats reads /proc and the cgroup (the last figures once it ended).
func (p *proc) Stats() lab.ProcStats {
	select {
	case <-p.done:
	default:
		st, err := p.g.Stats()
		ps, perr := limits.ProcStats(p.cmd.Process.Pid)
		p.mu.Lock()
		if err == nil {
			p.readStats(st)
		}
		if perr == nil {
			p.stats.RSSBytes, p.stats.Threads, p.stats.CPUSeconds = ps.RSSBytes, ps.Threads, ps.CPUSeconds
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *proc) readStats(st limits.Stats) {
	p.stats.Pids = st.Pids
	p.stats.PidsRefused = max(p.stats.PidsRefused, st.PidsLimitHits)
	p.stats.MemoryLimitBytes = st.MemoryLimitBytes
	if st.Enforced {
		p.stats.MemoryChargedBytes = st.MemoryBytes
		p.stats.MemoryPeakBytes = max(p.stats.MemoryPeakBytes, st.MemoryMaxBytes)
	}
}

func (p *proc) Done() <-chan struct{} { return p.done }

// ended says whether the process has ended.
func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
func (p *proc) Exit() lab.ProcExit { <-p.done; return p.exit }

// Stop ends the program politely (SIGTERM), then firmly after grace.
func (p *proc) Stop(grace time.Duration) lab.ProcExit {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	sig := syscall.SIGTERM
	if grace <= 0 {
		sig = syscall.SIGKILL
	}
	_ = p.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(max(grace, time.Second)):
		_ = p.Signal(syscall.SIGKILL)
		<-p.done
	}
	return p.exit
}

// Release deletes the program's cgroup once it ended.
func (p *proc) Release() error {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.released {
		return nil
	}
	p.released = true
	return p.g.Delete()
}

// describeExit says how a process ended; an OOM kill is recognised from
// the cgroup's counters or the kernel log, not from the exit status.
// A program the harness stopped is not looked up in the kernel log.
func describeExit(werr error, ps *os.ProcessState, st limits.Stats, pid int, since time.Time, stopped bool) lab.ProcExit {
	e := lab.ProcExit{Code: -1, Stopped: stopped}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		e.Err = werr
	}
	if ps != nil {
		e.Code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal().String()
		}
	}
	switch {
	case st.Enforced && st.OOMKills > 0:
		e.OOM = true
		e.How = fmt.Sprintf("killed by the kernel OOM killer (cgroup oom_kill %d, peak %d MiB of %d MiB)", st.OOMKills, st.MemoryMaxBytes>>20, st.MemoryLimitBytes>>20)
	case stopped:
		e.How = "stopped by the harness"
	case e.Signal == "killed":
		if ok, line := limits.KernelOOMKilled(pid, since); ok {
			e.OOM = true
			e.How = "killed by the kernel OOM killer (kernel log: " + line + ")"
		} else {
			e.How = "killed by SIGKILL (not an OOM kill by the cgroup counters or the kernel log)"
		}
	case e.Signal != "":
		e.How = "killed by signal " + e.Signal
	case werr != nil && e.Code == -1:
		e.How = "ended: " + werr.Error()
	default:
		e.How = fmt.Sprintf("exited with status %d", e.Code)
	}
	return e
}
