package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/zkmirror"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

// clientSample is one sample of one client incarnation, on the run clock.
type clientSample struct {
	t    float64
	inc  int
	s    zkmirror.Sample
	recv time.Time
}

// client supervises one client process: starts it in its cgroup, reads its
// samples, recognises how it ended, and restarts it when the scenario says.
type client struct {
	id      string
	w       scenarios.Workload
	servers []string
	hot     int
	seed    uint64
	launch  launcher
	logPath string
	clock   func(time.Time) float64
	log     *slog.Logger

	mu      sync.Mutex
	samples []clientSample
	sum     reports.ClientSummary
	events  []reports.Event
	alive   bool
	// lastFinal holds the last sample of each ended incarnation.
	finals []zkmirror.Sample
}

func (c *client) run(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	for inc := 0; ctx.Err() == nil; inc++ {
		err := c.runOnce(ctx, inc)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.log.Warn("client could not run", "client", c.id, "err", err)
			c.event(time.Now(), "note", fmt.Sprintf("could not start: %v", err))
		}
		if !c.w.Restart {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.w.RestartDelay.D()):
		}
	}
}

func (c *client) event(at time.Time, kind, detail string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, reports.Event{T: c.clock(at), Kind: kind, Source: c.id, Detail: detail})
}

// launch is one client incarnation as a launcher sees it.
type launch struct {
	ID       string
	Inc      int
	Args     []string // arguments after the program: agent zk-tree-mirror ...
	MemoryMB int
	Log      io.Writer // the client's own log (stderr)
	// OnStdout receives every line the client prints on stdout.
	OnStdout func(line []byte)
	// OnStart is called once the client runs, with a description
	// ("pid 123", "container abc").
	OnStart func(desc string)
}

// launcher runs a client incarnation to its end: as a local process in a
// cgroup, or as a container. Run returns how it ended; when ctx ends it
// stops the client and returns stopped = true.
type launcher interface {
	Run(ctx context.Context, l launch) (exit reports.Exit, stopped bool, err error)
}

func (c *client) runOnce(ctx context.Context, inc int) error {
	args := []string{"agent", "zk-tree-mirror",
		"--id", c.id,
		"--servers", strings.Join(c.servers, ","),
		"--root", c.w.Tree.Path,
		"--strategy", c.w.Strategy,
		"--window", strconv.Itoa(max(c.w.Window, 1)),
		"--retries", strconv.Itoa(c.w.Retries),
		"--session-timeout", c.w.SessionTimeout.D().String(),
		"--report-interval", reportInterval(c.w).String(),
		"--hot-count", strconv.Itoa(c.hot),
		"--seed", strconv.FormatUint(c.seed+uint64(inc), 10),
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open client log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s start %d: %s\n", time.Now().Format(time.RFC3339Nano), inc, strings.Join(args, " "))

	var last zkmirror.Sample
	var mu sync.Mutex
	exit, stopped, err := c.launch.Run(ctx, launch{
		ID: c.id, Inc: inc, Args: args, MemoryMB: c.w.MemoryLimitMB, Log: logf,
		OnStart: func(desc string) {
			c.mu.Lock()
			c.sum.Starts++
			c.alive = true
			c.mu.Unlock()
			c.event(time.Now(), "client-start", fmt.Sprintf("incarnation %d, %s", inc, desc))
		},
		OnStdout: func(line []byte) {
			var s zkmirror.Sample
			if json.Unmarshal(line, &s) != nil {
				return
			}
			c.mu.Lock()
			c.samples = append(c.samples, clientSample{t: c.clock(time.UnixMilli(s.UnixMS)), inc: inc, s: s, recv: time.Now()})
			c.sum.PeakRSSMB = max(c.sum.PeakRSSMB, float64(s.RSSBytes)/(1<<20))
			c.mu.Unlock()
			mu.Lock()
			last = s
			mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	ended := time.Now()
	mu.Lock()
	final := last
	mu.Unlock()
	c.mu.Lock()
	c.alive = false
	c.finals = append(c.finals, final)
	c.sum.Requests += final.Completed
	c.sum.Reconnect += final.Reconnects
	c.mu.Unlock()
	if stopped {
		return nil // stopped by the harness at the end of the run
	}
	exit.T = c.clock(ended)
	c.mu.Lock()
	c.sum.Exits = append(c.sum.Exits, exit)
	if exit.OOM {
		c.sum.OOMKills++
	}
	c.mu.Unlock()
	kind := "client-exit"
	if exit.OOM {
		kind = "oom-kill"
	}
	c.event(ended, kind, exit.How)
	c.log.Info("client ended", "client", c.id, "how", exit.How)
	return nil
}

// processLauncher runs clients as local processes, each in a cgroup of its
// own with the memory limit.
type processLauncher struct {
	bin  string
	args []string // before "agent", e.g. a test binary's flags
	mgr  *limits.Manager
	log  interface{ Warn(string, ...any) }
}

func (p processLauncher) Run(ctx context.Context, l launch) (reports.Exit, bool, error) {
	name := fmt.Sprintf("%s-%d", l.ID, l.Inc)
	g, err := p.mgr.NewGroup(name, limits.Limits{MemoryBytes: int64(l.MemoryMB) << 20})
	if err != nil {
		return reports.Exit{}, false, fmt.Errorf("create cgroup: %w", err)
	}
	defer func() {
		if err := g.Delete(); err != nil {
			p.log.Warn("delete cgroup", "group", name, "err", err)
		}
	}()
	cmd := exec.Command(p.bin, append(append([]string{}, p.args...), l.Args...)...)
	cmd.Env = append(os.Environ(), "GOTRACEBACK=single")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = l.Log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return reports.Exit{}, false, fmt.Errorf("pipe client output: %w", err)
	}
	if err := g.Start(cmd); err != nil {
		return reports.Exit{}, false, fmt.Errorf("start client: %w", err)
	}
	started := time.Now()
	l.OnStart(fmt.Sprintf("pid %d", cmd.Process.Pid))
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.OnStdout(sc.Bytes())
		}
	}()
	waitErr := make(chan error, 1)
	go func() {
		<-readDone
		waitErr <- cmd.Wait()
	}()
	var werr error
	select {
	case werr = <-waitErr:
	case <-ctx.Done():
		// End of the run (or Ctrl-C): stop our own client politely, then firmly.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case werr = <-waitErr:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			werr = <-waitErr
		}
		return reports.Exit{}, true, nil
	}
	st, _ := g.Stats()
	return describeExit(werr, cmd.ProcessState, st, cmd.Process.Pid, started), false, nil
}

// describeExit says how a client process ended; an OOM kill is recognised
// from the cgroup's counters or the kernel log, not from the exit status.
func describeExit(werr error, ps *os.ProcessState, st limits.Stats, pid int, since time.Time) reports.Exit {
	e := reports.Exit{Code: -1}
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

func reportInterval(w scenarios.Workload) time.Duration {
	if w.ReportInterval.D() > 0 {
		return w.ReportInterval.D()
	}
	return time.Second
}
