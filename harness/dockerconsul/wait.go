package dockerconsul

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"
)

// HTTPStrategy waits until the agent's published HTTP API answers the way
// it should. WaitForAgent waits until GET /v1/agent/self answers 200 (the
// agent runs; it need not have joined anyone). WaitForLeader waits until
// GET /v1/status/leader names a leader.
//
// It gives up at once when the container stops (an exit or an OOM kill),
// so a broken configuration fails fast. (testcontainers' own HTTP strategy
// cannot be told to stop then.)
type HTTPStrategy struct {
	check   func(ctx context.Context, addr string) error
	desc    string
	timeout time.Duration
	poll    time.Duration
}

var _ wait.Strategy = (*HTTPStrategy)(nil)
var _ wait.StrategyTimeout = (*HTTPStrategy)(nil)

// WaitForAgent waits for 200 from /v1/agent/self.
func WaitForAgent() *HTTPStrategy {
	return &HTTPStrategy{
		desc: "/v1/agent/self answers", timeout: DefaultStartupTimeout, poll: 100 * time.Millisecond,
		check: func(ctx context.Context, addr string) error {
			code, body, err := httpGet(ctx, addr, "/v1/agent/self")
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("HTTP %d %q", code, truncate(string(body), 120))
			}
			return err
		},
	}
}

// WaitForLeader waits until /v1/status/leader names a leader.
func WaitForLeader() *HTTPStrategy {
	return &HTTPStrategy{
		desc: "/v1/status/leader names a leader", timeout: DefaultStartupTimeout, poll: 100 * time.Millisecond,
		check: func(ctx context.Context, addr string) error {
			l, err := statusLeader(ctx, addr)
			if err == nil && l == "" {
				err = fmt.Errorf("no leader yet")
			}
			return err
		},
	}
}

// WithStartupTimeout sets how long to wait in all.
func (s *HTTPStrategy) WithStartupTimeout(d time.Duration) *HTTPStrategy {
	if d > 0 {
		s.timeout = d
	}
	return s
}

// WithPollInterval sets the time between attempts.
func (s *HTTPStrategy) WithPollInterval(d time.Duration) *HTTPStrategy {
	if d > 0 {
		s.poll = d
	}
	return s
}

// Timeout implements wait.StrategyTimeout.
func (s *HTTPStrategy) Timeout() *time.Duration { return &s.timeout }

func (s *HTTPStrategy) String() string {
	return fmt.Sprintf("%s on %s (within %v)", s.desc, HTTPPort, s.timeout)
}

// WaitUntilReady implements wait.Strategy.
func (s *HTTPStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	last := "no answer yet"
	for {
		st, err := target.State(ctx)
		if err != nil {
			return fmt.Errorf("wait for %s: get state: %w", s.desc, err)
		}
		if !st.Running {
			return fmt.Errorf("wait for %s: container stopped (status %s, exit code %d, OOM killed %v)", s.desc, st.Status, st.ExitCode, st.OOMKilled)
		}
		if p, err := target.MappedPort(ctx, HTTPPort); err != nil {
			last = err.Error()
		} else {
			pctx, pcancel := context.WithTimeout(ctx, DefaultProbeTimeout)
			err = s.check(pctx, net.JoinHostPort(loopback, p.Port()))
			pcancel()
			if err == nil {
				return nil
			}
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %s)", s.desc, ctx.Err(), last)
		case <-time.After(s.poll):
		}
	}
}
