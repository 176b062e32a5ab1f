package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/chaoslab/chaoslab/harness/infra/syncw"
)

// LogFollower copies a container's stdout and stderr into a file until the
// container is removed or Stop is called. It survives the container being
// stopped, killed and started again: each start's output is appended, with
// a line marking every stop (exit code, OOM kill).
type LogFollower struct {
	path   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// logRetry is how often the follower looks again at a stopped container.
const logRetry = 250 * time.Millisecond

// FollowLogs starts copying the output of the container (ID or name) to
// path, appending; the folder is created. It returns at once; the copy runs
// until the container is removed, ctx ends or Stop is called.
func FollowLogs(ctx context.Context, container, path string) (*LogFollower, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("follow logs of %s: create log dir: %w", container, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("follow logs of %s: open log: %w", container, err)
	}
	out := syncw.New(f) // stdout and stderr go to the same file
	l, err := followStreams(ctx, container, out, out, func() { f.Close() })
	if err != nil {
		f.Close()
		return nil, err
	}
	l.path = path
	return l, nil
}

// FollowStreams is FollowLogs with the container's stdout and stderr kept
// apart, each written to its own writer (the marks of a stop and a start
// again go to stderr). It reads one stream from the container's first
// line on, and after a stop only what came after: no line is lost or read
// twice, where testcontainers' log production, starting a new stream
// every few seconds from the time it asks, loses the lines of the moment
// between two streams.
func FollowStreams(ctx context.Context, container string, stdout, stderr io.Writer) (*LogFollower, error) {
	return followStreams(ctx, container, stdout, stderr, func() {})
}

// followStreams starts the copy; ended runs once it has ended, before
// Done is closed.
func followStreams(ctx context.Context, container string, stdout, stderr io.Writer, ended func()) (*LogFollower, error) {
	cli, err := Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("follow logs of %s: %w", container, err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &LogFollower{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer ended()
		l.err = follow(ctx, cli, container, stdout, stderr)
	}()
	return l, nil
}

// Path is the file the output goes to.
func (l *LogFollower) Path() string { return l.path }

// Done is closed when the copy has ended.
func (l *LogFollower) Done() <-chan struct{} { return l.done }

// Wait waits up to d for the copy to end by itself (the container removed)
// and then stops it; it returns the copy's error, if any.
func (l *LogFollower) Wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
		l.cancel()
		<-l.done
	}
	return l.err
}

// Stop ends the copy at once and waits for it to finish writing.
func (l *LogFollower) Stop() error {
	l.cancel()
	<-l.done
	return l.err
}

type logClient interface {
	ContainerLogs(ctx context.Context, container string, options client.ContainerLogsOptions) (client.ContainerLogsResult, error)
	ContainerInspect(ctx context.Context, container string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
}

// follow copies the container's output until it is removed or ctx ends.
// A container created but not started yet has no output: it is read once
// it runs.
func follow(ctx context.Context, cli logClient, container string, stdout, stderr io.Writer) error {
	since := ""
	stopped := false // the last stream ended with the container stopped
	out := stderr    // where the marks go
	for {
		ins, err := cli.ContainerInspect(ctx, container, client.ContainerInspectOptions{})
		if err != nil {
			if IsNotFound(err) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("inspect %s: %w", container, err)
		}
		tty := ins.Container.Config != nil && ins.Container.Config.Tty
		running := ins.Container.State != nil && ins.Container.State.Running
		created := ins.Container.State != nil && ins.Container.State.Status == "created"
		if (since == "" && !created) || running {
			started := time.Now()
			if stopped {
				stopped = false
				fmt.Fprintf(out, "=== chaoslab %s: container %s started again\n", started.Format(time.RFC3339Nano), short(container))
			}
			rc, err := cli.ContainerLogs(ctx, container, client.ContainerLogsOptions{
				ShowStdout: true, ShowStderr: true, Follow: true, Since: since,
			})
			if err != nil {
				if IsNotFound(err) || ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("read logs of %s: %w", container, err)
			}
			if tty {
				_, _ = io.Copy(stdout, rc)
			} else {
				_, _ = stdcopy.StdCopy(stdout, stderr, rc)
			}
			_ = rc.Close()
			if ctx.Err() != nil {
				return nil
			}
			// The stream ends when the container stops (or is removed):
			// next time read only what came after.
			end := time.Now()
			if end.Before(started) {
				end = started
			}
			since = fmt.Sprintf("%d.%09d", end.Unix(), end.Nanosecond())
			if ins, err := cli.ContainerInspect(ctx, container, client.ContainerInspectOptions{}); err == nil && ins.Container.State != nil && !ins.Container.State.Running {
				s := ins.Container.State
				fmt.Fprintf(out, "=== chaoslab %s: container %s stopped: exit code %d, OOM killed %v\n",
					end.Format(time.RFC3339Nano), short(container), s.ExitCode, s.OOMKilled)
				stopped = true
				continue
			}
			if time.Since(started) >= logRetry {
				continue
			}
			// The stream ended at once although the container runs: do not spin.
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logRetry):
		}
	}
}

// short shortens a container ID the way the docker CLI shows it.
func short(id string) string {
	if len(id) == 64 {
		return id[:12]
	}
	return id
}
