package dockerzk

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// FourLetterStrategy waits until the server behind the published client
// port answers a four-letter word the way it should. WaitForRuok is the
// default of Run: a member of an ensemble answers "imok" as soon as it
// listens, before any leader is elected (mntr would say "not currently
// serving" until there is a quorum). WaitForServing waits until mntr says
// the server serves clients (leader, follower, observer or standalone).
//
// It gives up at once when the container stops (an exit or an OOM kill), so
// a broken configuration fails fast.
type FourLetterStrategy struct {
	cmd     string
	ok      func(answer string) bool
	desc    string
	timeout time.Duration
	poll    time.Duration
}

var _ wait.Strategy = (*FourLetterStrategy)(nil)
var _ wait.StrategyTimeout = (*FourLetterStrategy)(nil)

// WaitForRuok waits for "imok".
func WaitForRuok() *FourLetterStrategy {
	return &FourLetterStrategy{
		cmd: "ruok", desc: "ruok answered imok", timeout: DefaultStartupTimeout, poll: 200 * time.Millisecond,
		ok: func(s string) bool { return strings.TrimSpace(s) == "imok" },
	}
}

// WaitForServing waits until mntr reports a serving state.
func WaitForServing() *FourLetterStrategy {
	return &FourLetterStrategy{
		cmd: "mntr", desc: "mntr reports a serving state", timeout: DefaultStartupTimeout, poll: 200 * time.Millisecond,
		ok: func(s string) bool {
			kv, err := zkcheck.ParseMntr(s)
			return err == nil && zkcheck.Serving(kv["zk_server_state"])
		},
	}
}

// WithStartupTimeout sets how long to wait in all.
func (s *FourLetterStrategy) WithStartupTimeout(d time.Duration) *FourLetterStrategy {
	if d > 0 {
		s.timeout = d
	}
	return s
}

// WithPollInterval sets the time between attempts.
func (s *FourLetterStrategy) WithPollInterval(d time.Duration) *FourLetterStrategy {
	if d > 0 {
		s.poll = d
	}
	return s
}

// Timeout implements wait.StrategyTimeout.
func (s *FourLetterStrategy) Timeout() *time.Duration { return &s.timeout }

func (s *FourLetterStrategy) String() string {
	return fmt.Sprintf("%s on %s (within %v)", s.desc, ClientPort, s.timeout)
}

// WaitUntilReady implements wait.Strategy.
func (s *FourLetterStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	last := "no answer yet"
	for {
		st, err := target.State(ctx)
		if err != nil {
			return fmt.Errorf("wait for %s: get state: %w", s.cmd, err)
		}
		if !st.Running {
			return fmt.Errorf("wait for %s: container stopped (status %s, exit code %d, OOM killed %v)", s.cmd, st.Status, st.ExitCode, st.OOMKilled)
		}
		if p, err := target.MappedPort(ctx, ClientPort); err != nil {
			last = err.Error()
		} else {
			pctx, pcancel := context.WithTimeout(ctx, DefaultProbeTimeout)
			out, err := zkcheck.FourLetter(pctx, net.JoinHostPort(loopback, p.Port()), s.cmd)
			pcancel()
			switch {
			case err != nil:
				last = err.Error()
			case s.ok(out):
				return nil
			default:
				last = fmt.Sprintf("answer %q", zkcheck.Truncate(strings.TrimSpace(out), 120))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last: %s)", s.cmd, ctx.Err(), last)
		case <-time.After(s.poll):
		}
	}
}
