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
	// textMB is added to the memory limit: the kernel charges the page
	// cache of the client's executable to the container, which a local
	// process shares with its parent. Without it a container would have
	// less room than a process for the same scenario.
	textMB int
}

func (d containerLauncher) Run(ctx context.Context, l launch) (reports.Exit, bool, error) {
	lines := &lineSplitter{onStdout: l.OnStdout, log: l.Log}
	mem := int64(l.MemoryMB+d.textMB) << 20
	if l.MemoryMB == 0 {
		mem = 0
	}
	name := fmt.Sprintf("%s-%s-%d", d.runID, l.ID, l.Inc)
	c, err := testcontainers.Run(ctx, d.image,
		testcontainers.WithName(name),
		testcontainers.WithCmd(l.Args...),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(d.runID), map[string]string{
			docker.LabelComponent: "client", docker.LabelMember: l.ID,
		})),
		network.WithNetworkName([]string{l.ID}, d.network),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			if mem > 0 {
				hc.Memory = mem
				hc.MemorySwap = mem // no swap: the limit is the limit
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
			continue
		}
		// Give the log stream a moment to deliver the last samples.
		time.Sleep(300 * time.Millisecond)
		e := reports.Exit{Code: st.ExitCode}
		switch {
		case st.OOMKilled:
			e.OOM = true
			e.Signal = "killed"
			e.How = fmt.Sprintf("killed by the kernel OOM killer (container state OOMKilled, exit %d, limit %d MiB + %d MiB for the executable)", st.ExitCode, l.MemoryMB, d.textMB)
		case st.ExitCode == 137:
			e.Signal = "killed"
			e.How = "killed by SIGKILL (exit 137, not an OOM kill by the container state)"
		default:
			e.How = fmt.Sprintf("exited with status %d", st.ExitCode)
		}
		return e, false, nil
	}
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
