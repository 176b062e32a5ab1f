package dockerzk

// The health rules are copied from harness/zkensemble/ensemble.go (status,
// poll, leaderOf, Leader, Followers, WaitHealthy, health, dedup), which
// this package may not change: the same rules must judge both backends.
// Only the member type and how "running"/"paused" are learnt differ (here
// from the engine's container state). Keep the two in step.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Polling of Leader and WaitHealthy: an answer counts once it was seen on
// stablePolls consecutive polls pollInterval apart (just after a paused
// leader is resumed two servers both say "leader" for about a second).
const (
	stablePolls  = 3
	pollInterval = 300 * time.Millisecond
)

// status is one member's answer in one poll.
type status struct {
	m       *Member
	running bool
	paused  bool
	kv      map[string]string
	state   string
	err     error
}

func (s status) String() string {
	switch {
	case !s.running:
		return s.m.name + "=not running"
	case s.paused:
		return s.m.name + "=paused"
	case s.err != nil:
		if errors.Is(s.err, ErrNotServing) {
			return s.m.name + "=not serving"
		}
		return s.m.name + "=error(" + s.err.Error() + ")"
	}
	return s.m.name + "=" + s.state
}

// poll asks the engine for every member's container state and every
// running, non-paused member for mntr, all at the same time, each with a
// deadline of at most DefaultProbeTimeout.
func (e *Ensemble) poll(ctx context.Context) []status {
	out := make([]status, len(e.members))
	var wg sync.WaitGroup
	for i, m := range e.members {
		out[i] = status{m: m}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := m.State(sctx)
			cancel()
			if err != nil {
				return // not running (no container)
			}
			out[i].running, out[i].paused = st.Running, st.Paused
			if !st.Running || st.Paused {
				return
			}
			pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
			defer cancel()
			kv, err := m.Mntr(pctx)
			out[i].kv, out[i].err = kv, err
			if err == nil {
				out[i].state = kv["zk_server_state"]
			}
		})
	}
	wg.Wait()
	return out
}

func summary(sts []status) string {
	parts := make([]string, len(sts))
	for i, s := range sts {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// leaderOf returns the one member that says leader (or standalone).
func leaderOf(sts []status) (*Member, error) {
	var leaders []string
	var leader *Member
	for _, s := range sts {
		if s.err == nil && (s.state == StateLeader || s.state == StateStandalone) {
			leaders = append(leaders, s.m.name)
			leader = s.m
		}
	}
	switch len(leaders) {
	case 1:
		return leader, nil
	case 0:
		return nil, fmt.Errorf("no leader (%s)", summary(sts))
	}
	return nil, fmt.Errorf("%d leaders %s (%s)", len(leaders), strings.Join(leaders, ","), summary(sts))
}

// Leader asks every running, non-paused member for its state and returns
// the leader once exactly one member says so on stablePolls consecutive
// polls. It retries until ctx ends.
func (e *Ensemble) Leader(ctx context.Context) (*Member, error) {
	var cand *Member
	streak := 0
	var last error
	for {
		l, err := leaderOf(e.poll(ctx))
		switch {
		case err != nil:
			cand, streak, last = nil, 0, err
		case l == cand:
			streak++
		default:
			cand, streak = l, 1
		}
		if streak >= stablePolls {
			return cand, nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("leader not yet stable")
			}
			return nil, fmt.Errorf("find leader: %w: %w", last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Followers waits for a stable leader (see Leader) and returns the members
// that then report "follower".
func (e *Ensemble) Followers(ctx context.Context) ([]*Member, error) {
	l, err := e.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("find followers: %w", err)
	}
	var out []*Member
	for _, s := range e.poll(ctx) {
		if s.m != l && s.err == nil && s.state == StateFollower {
			out = append(out, s.m)
		}
	}
	return out, nil
}

// WaitHealthy waits until every running member answers mntr, none is
// paused, exactly one is leader and all others follow (and the leader counts
// them as synced), the same on stablePolls consecutive polls. The error
// names the members that are not healthy. A member whose container is
// stopped (killed) does not count, as in zkensemble.
func (e *Ensemble) WaitHealthy(ctx context.Context) error {
	_, err := e.waitHealthy(ctx)
	return err
}

func (e *Ensemble) waitHealthy(ctx context.Context) ([]*Member, error) {
	var cand *Member
	streak := 0
	for {
		sts := e.poll(ctx)
		l, bad, problem := health(sts)
		switch {
		case problem != "":
			cand, streak = nil, 0
		case l == cand:
			streak++
		default:
			cand, streak = l, 1
		}
		if streak >= stablePolls {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			if problem == "" {
				problem = "leader " + l.name + " not yet stable"
			}
			return bad, fmt.Errorf("wait healthy: %s: %w", problem, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// health judges one poll: it returns the leader, or the members that are
// not healthy and a description.
func health(sts []status) (*Member, []*Member, string) {
	var bad []*Member
	var probs []string
	running, followers := 0, 0
	var leader *status
	for i, s := range sts {
		if !s.running {
			continue
		}
		running++
		switch {
		case s.paused, s.err != nil:
			bad = append(bad, s.m)
			probs = append(probs, s.String())
		case s.state == StateLeader || s.state == StateStandalone:
			if leader != nil {
				bad = append(bad, leader.m, s.m)
				probs = append(probs, fmt.Sprintf("two leaders %s and %s", leader.m.name, s.m.name))
			}
			leader = &sts[i]
		case s.state == StateFollower:
			followers++
		default:
			bad = append(bad, s.m)
			probs = append(probs, s.String())
		}
	}
	if running == 0 {
		return nil, nil, "no member running"
	}
	if leader == nil && len(probs) == 0 {
		probs = append(probs, "no leader ("+summary(sts)+")")
	}
	if len(probs) == 0 && leader.state == StateLeader {
		if v, ok := leader.kv["zk_synced_followers"]; ok {
			if synced, err := strconv.Atoi(v); err == nil && synced < followers {
				bad = append(bad, leader.m)
				probs = append(probs, fmt.Sprintf("%s: leader has %d synced followers, %d members follow", leader.m.name, synced, followers))
			}
		}
	}
	if len(probs) > 0 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].id < bad[j].id })
		return nil, dedup(bad), strings.Join(probs, "; ")
	}
	return leader.m, nil, ""
}

func dedup(ms []*Member) []*Member {
	out := ms[:0]
	for i, m := range ms {
		if i == 0 || m != ms[i-1] {
			out = append(out, m)
		}
	}
	return out
}
