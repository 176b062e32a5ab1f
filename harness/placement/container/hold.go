package container

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// An agent's container is started ahead with its agent held (lab.HoldEnv)
// until it is released with SIGUSR1: the engine starts about three
// containers a second here, and a signal to each of many held agents
// releases them within a fraction of that.

// holdTimeout bounds the wait for a held agent to say it waits.
const holdTimeout = 30 * time.Second

// catchHeld swallows the agent's held line and closes the channel it
// returns when it comes; other lines go where they went.
func (s *lineSplitter) catchHeld() chan struct{} {
	held := make(chan struct{})
	var once sync.Once
	s.mu.Lock()
	defer s.mu.Unlock()
	user, log := s.onStdout, s.log
	s.onStdout = func(line []byte) {
		switch {
		case bytes.Equal(bytes.TrimSpace(line), []byte(lab.HeldLine)):
			once.Do(func() { close(held) })
		case user != nil:
			user(line)
		default:
			_, _ = log.Write(append(line, '\n'))
		}
	}
	return held
}

// held waits until the started container's agent holds, and returns it
// as a pending program that its Start releases.
func (pd *pending) held(ctx context.Context, held chan struct{}) (lab.Pending, error) {
	p, err := pd.running(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case <-held:
		return &heldAgent{s: pd.s, p: p}, nil
	case <-p.done:
		return nil, fmt.Errorf("hold %s: it exited before it held: %s", pd.name, p.exit.How)
	case <-time.After(holdTimeout):
	case <-ctx.Done():
	}
	p.Stop(0)
	return nil, fmt.Errorf("hold %s: its agent did not say it holds within %s", pd.name, holdTimeout)
}

// heldAgent is a container whose agent waits for its release.
type heldAgent struct {
	s *Site
	p *proc
}

// Start releases the agent; it returns once the signal was delivered.
func (h *heldAgent) Start(ctx context.Context) (lab.Proc, error) {
	if err := h.p.Signal(syscall.SIGUSR1); err != nil {
		return nil, fmt.Errorf("release %s: %w", h.p.name, err)
	}
	h.p.mu.Lock()
	h.p.started = time.Now()
	h.p.mu.Unlock()
	h.s.started(h.p)
	return h.p, nil
}
