package dockeretcd

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"
)

// HealthStrategy waits until the member behind a published port answers
// GET /health the way it should. WaitForAnswer is what a member of a larger
// cluster waits for: any answer on the metrics port, which etcd serves
// before it has joined a quorum (the client port serves nothing until
// then). WaitForHealthy waits until /health on the client port says the
// member serves (a leader, a read goes through).
//
// It gives up at once when the container stops (an exit or an OOM kill),
// so a broken configuration fails fast. (testcontainers' own HTTP strategy
// cannot be told to stop then, and its port check runs a shell in the
// container, which the scratch image has not.)
type HealthStrategy struct {
	port    string
	anyCode bool
	desc    string
	timeout time.Duration
	poll    time.Duration
}

var _ wait.Strategy = (*HealthStrategy)(nil)
var _ wait.StrategyTimeout = (*HealthStrategy)(nil)

// WaitForAnswer waits for any HTTP answer to /health on the metrics port.
func WaitForAnswer() *HealthStrategy {
	return &HealthStrategy{port: MetricsPort, anyCode: true, desc: "any answer to /health", timeout: DefaultStartupTimeout, poll: 100 * time.Millisecond}
}

// WaitForHealthy waits for {"health":"true"} from /health on the client port.
func WaitForHealthy() *HealthStrategy {
	return &HealthStrategy{port: ClientPort, desc: "/health says healthy", timeout: DefaultStartupTimeout, poll: 100 * time.Millisecond}
}

// WithStartupTimeout sets how long to wait in all.
func (s *HealthStrategy) WithStartupTimeout(d time.Duration) *HealthStrategy {
	if d > 0 {
		s.timeout = d
	}
	return s
}

// WithPollInterval sets the time between attempts.
func (s *HealthStrategy) WithPollInterval(d time.Duration) *HealthStrategy {
	if d > 0 {
		s.poll = d
	}
	return s
}

// Timeout implements wait.StrategyTimeout.
func (s *HealthStrategy) Timeout() *time.Duration { return &s.timeout }

func (s *HealthStrategy) String() string {
	return fmt.Sprintf("%s on %s (within %v)", s.desc, s.port, s.timeout)
}

// WaitUntilReady implements wait.Strategy.
func (s *HealthStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
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
		if p, err := target.MappedPort(ctx, s.port); err != nil {
			last = err.Error()
		} else {
			addr := net.JoinHostPort(loopback, p.Port())
			pctx, pcancel := context.WithTimeout(ctx, DefaultProbeTimeout)
			if s.anyCode {
				_, _, err = httpGet(pctx, addr, "/health")
			} else {
				err = httpHealth(pctx, addr)
			}
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
