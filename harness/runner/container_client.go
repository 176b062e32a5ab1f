package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/reports"
)

// containerLauncher runs each client incarnation as a container of the
// chaoslab image on the run's network, with the memory limit as the
// container's (the kernel OOM-kills it, as in Kubernetes).
type containerLauncher struct {
	image   string
	network string
	runID   string
	// textMB bounds what is added to the memory limit for the page cache
	// of the client's executable, which the kernel charges to the
	// container (a local process shares those pages with its parent and
	// is charged for none). Each container starts with the whole
	// allowance; once it runs (settle) its limit is lowered to the memory
	// limit plus the page cache actually charged to it.
	textMB int
	// lockText: the client is chaoslab's own agent, started with
	// --lock-text so that it locks its executable's pages in memory.
	// Otherwise the kernel would reclaim those clean pages to make room for
	// the heap before it OOM-kills, and the container would have more room
	// for its heap than its memory limit: measured, vulnerable IL-0587
	// clients peaked at 94 MiB of RSS under a 96 MiB limit and were never
	// killed, where local processes are killed at 93 MiB.
	lockText bool
}

// settle is how long a client container runs before the page cache
// charged to it is measured: by then it has connected, read and reported,
// which pages in the code it runs.
const settle = 2 * time.Second

func (d containerLauncher) Run(ctx context.Context, l launch) (reports.Exit, bool, error) {
	lines := &lineSplitter{onStdout: l.OnStdout, log: l.Log}
	mem := int64(l.MemoryMB+d.textMB) << 20
	if l.MemoryMB == 0 {
		mem = 0
	}
	name := fmt.Sprintf("%s-%s-%d", d.runID, l.ID, l.Inc)
	args := l.Args
	if d.lockText && len(args) >= 2 && args[0] == "agent" && args[1] == "zk-tree-mirror" {
		args = append(append([]string(nil), args...), "--lock-text")
	}
	c, err := testcontainers.Run(ctx, d.image,
		testcontainers.WithName(name),
		testcontainers.WithCmd(args...),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(d.runID), map[string]string{
			docker.LabelComponent: "client", docker.LabelMember: l.ID,
		})),
		network.WithNetworkName([]string{l.ID}, d.network),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			if mem > 0 {
				hc.Memory = mem
				hc.MemorySwap = mem // no swap: the limit is the limit
			}
			if d.lockText {
				// mlock beyond RLIMIT_MEMLOCK; raising the rlimit itself
				// is refused by some engines (runc without CAP_SYS_RESOURCE).
				hc.CapAdd = append(hc.CapAdd, "IPC_LOCK")
			}
		}),
		testcontainers.WithLogConsumers(lines),
	)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return reports.Exit{}, false, fmt.Errorf("start client container: %w", err)
	}
	defer func() {
		// Removing the container also ends its log stream.
		_ = c.Terminate(context.WithoutCancel(ctx))
		lines.flush()
	}()
	l.OnStart("container " + name)

	started := time.Now()
	allowance := d.textMB
	settled := mem == 0 || d.textMB == 0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			stop := 3 * time.Second
			_ = c.Stop(context.WithoutCancel(ctx), &stop)
			return reports.Exit{}, true, nil
		case <-tick.C:
		}
		ins, err := c.Inspect(ctx)
		if err != nil || ins.State == nil {
			continue
		}
		st := ins.State
		if st.Running {
			if !settled && time.Since(started) >= settle {
				settled = true
				allowance = d.settle(ctx, c, l)
			}
			continue
		}
		// Give the log stream a moment to deliver the last samples.
		time.Sleep(300 * time.Millisecond)
		e := reports.Exit{Code: st.ExitCode}
		switch {
		case st.OOMKilled:
			e.OOM = true
			e.Signal = "killed"
			e.How = fmt.Sprintf("killed by the kernel OOM killer (container state OOMKilled, exit %d, limit %d MiB + %d MiB of page cache charged to it)", st.ExitCode, l.MemoryMB, allowance)
		case st.ExitCode == 137:
			e.Signal = "killed"
			e.How = "killed by SIGKILL (exit 137, not an OOM kill by the container state)"
		default:
			e.How = fmt.Sprintf("exited with status %d", st.ExitCode)
		}
		return e, false, nil
	}
}

// settle lowers the container's limit to the memory limit plus the page
// cache charged to it, and returns that allowance in MiB (the whole
// allowance when it cannot be measured or set, which it logs).
func (d containerLauncher) settle(ctx context.Context, c testcontainers.Container, l launch) int {
	dc := &docker.Container{Container: c}
	file, err := dc.MemoryFileBytes(ctx)
	if err != nil {
		fmt.Fprintf(l.Log, "chaoslab: keeping the %d MiB executable allowance: %v\n", d.textMB, err)
		return d.textMB
	}
	mb := int((file + (1 << 20) - 1) >> 20)
	if mb >= d.textMB {
		return d.textMB
	}
	if err := dc.SetMemoryLimit(ctx, int64(l.MemoryMB+mb)<<20); err != nil {
		fmt.Fprintf(l.Log, "chaoslab: keeping the %d MiB executable allowance: %v\n", d.textMB, err)
		return d.textMB
	}
	fmt.Fprintf(l.Log, "chaoslab: memory limit %d MiB + %d MiB of page cache charged to this container = %d MiB\n", l.MemoryMB, mb, l.MemoryMB+mb)
	return mb
}

// lineSplitter turns a container's log chunks into lines: stdout lines go
// to onStdout (the samples), stderr to the client's log.
type lineSplitter struct {
	mu       sync.Mutex
	onStdout func([]byte)
	log      io.Writer
	out, err bytes.Buffer
}

func (s *lineSplitter) Accept(l testcontainers.Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.LogType == testcontainers.StderrLog {
		s.log.Write(l.Content)
		return
	}
	s.out.Write(l.Content)
	for {
		i := bytes.IndexByte(s.out.Bytes(), '\n')
		if i < 0 {
			return
		}
		line := append([]byte(nil), s.out.Next(i + 1)[:i]...)
		s.onStdout(line)
	}
}

func (s *lineSplitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out.Len() > 0 {
		s.onStdout(bytes.TrimSpace(s.out.Bytes()))
		s.out.Reset()
	}
}
