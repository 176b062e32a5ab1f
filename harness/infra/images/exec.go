package images

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// command runs one program to completion. Its output is kept (the tail
// goes into the error when it fails) and, when log is set, written there
// as it comes (a build's log file). When ctx ends the program gets SIGINT
// (mmdebstrap and go clean up after themselves on it) and, 30 s later,
// SIGKILL.
type command struct {
	Dir   string
	Env   []string // added to this process's environment
	Stdin io.Reader
	Log   io.Writer
}

func (c command) run(ctx context.Context, logger *slog.Logger, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdin = c.Stdin
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	var out bytes.Buffer
	var w io.Writer = &out
	if c.Log != nil {
		w = io.MultiWriter(&out, c.Log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	logger.Debug("images: run", "cmd", name, "args", args, "dir", c.Dir, "env", c.Env)
	err := cmd.Run()
	if err != nil {
		if ctx.Err() != nil {
			return out.String(), fmt.Errorf("%s: %w", name, ctx.Err())
		}
		return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(shortArgs(args), " "), err, tail(out.String(), 40))
	}
	return out.String(), nil
}

// shortArgs keeps an error message readable when a command has many or
// long arguments (mmdebstrap's hooks).
func shortArgs(args []string) []string {
	var out []string
	for i, a := range args {
		if i >= 8 {
			out = append(out, "...")
			break
		}
		if len(a) > 80 {
			a = a[:77] + "..."
		}
		out = append(out, a)
	}
	return out
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// ticker prints "<name>: <what> (still running, 1m30s)" to w every period
// until the returned stop is called: the Consul build takes minutes.
func ticker(w io.Writer, name, what string, period time.Duration) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "%s: %s (still running, %s)\n", name, what, time.Since(start).Round(time.Second))
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// docker drives the docker CLI.
type docker struct {
	log *slog.Logger
}

// available checks that the docker CLI is installed and its daemon answers;
// it returns the daemon's architecture (amd64, arm64, ...).
func (d docker) available(ctx context.Context) (arch string, err error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return "", errors.New("docker: the docker CLI is not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := command{}.run(ctx, d.log, "docker", "version", "--format", "{{.Server.Arch}}")
	if err != nil {
		return "", fmt.Errorf("docker: the daemon does not answer: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// imageInfo is what chaoslab reads of an image.
type imageInfo struct {
	ID      string
	Size    int64
	Created time.Time
	Labels  map[string]string
}

// inspect returns nil, nil when the image does not exist.
func (d docker) inspect(ctx context.Context, ref string) (*imageInfo, error) {
	out, err := command{}.run(ctx, d.log, "docker", "image", "inspect", ref)
	if err != nil {
		if strings.Contains(strings.ToLower(out), "no such image") {
			return nil, nil
		}
		return nil, err
	}
	var raw []struct {
		ID      string `json:"Id"`
		Size    int64
		Created time.Time
		Config  struct {
			Labels map[string]string
		}
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("docker image inspect %s: %w", ref, err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	return &imageInfo{ID: raw[0].ID, Size: raw[0].Size, Created: raw[0].Created, Labels: raw[0].Config.Labels}, nil
}

// removeIfUntagged removes an image that a rebuild left without a tag
// (best effort: it may still be used by a container, or be tagged
// elsewhere, then it stays).
func (d docker) removeIfUntagged(ctx context.Context, id string) {
	out, err := command{}.run(ctx, d.log, "docker", "image", "inspect", "--format", "{{len .RepoTags}}", id)
	if err != nil || strings.TrimSpace(out) != "0" {
		return
	}
	if _, err := (command{}).run(ctx, d.log, "docker", "image", "rm", id); err != nil {
		d.log.Debug("images: could not remove the replaced image", "id", id, "err", err)
	}
}
