package dockeretcd

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
// stablePolls consecutive polls pollInterval apart (as in harness/dockerzk;
// raft allows one leader per term, but a resumed old leader may still
// answer as leader of its old term for a moment).
const (
	stablePolls  = 3
	pollInterval = 250 * time.Millisecond
)

// status is one member's answer in one poll.
type status struct {
	m        *Member
	running  bool
	paused   bool
	memberID uint64 // of the answer's header
	leader   uint64 // the member's leader (0: none)
	term     uint64 // raft term
	errors   []string
	err      error
}

// answered reports whether the member answered its Status.
func (s status) answered() bool { return s.running && !s.paused && s.err == nil }

// claims reports whether the member says it is the leader.
func (s status) claims() bool { return s.answered() && s.leader != 0 && s.leader == s.memberID }

// names maps the member IDs seen in a poll (and known before) to names.
func names(sts []status) map[uint64]string {
	out := map[uint64]string{}
	for _, s := range sts {
		if s.memberID != 0 {
			out[s.memberID] = s.m.name
		} else if id := s.m.MemberID(); id != 0 {
			out[id] = s.m.name
		}
	}
	return out
}

func nameOf(ids map[uint64]string, id uint64) string {
	if id == 0 {
		return "none"
	}
	if n, ok := ids[id]; ok {
		return n
	}
	return strconv.FormatUint(id, 16)
}

func (s status) describe(ids map[uint64]string) string {
	switch {
	case !s.running:
		return s.m.name + "=not running"
	case s.paused:
		return s.m.name + "=paused"
	case s.err != nil:
		return s.m.name + "=error(" + s.err.Error() + ")"
	case s.claims():
		return fmt.Sprintf("%s=leader(term %d)", s.m.name, s.term)
	}
	return fmt.Sprintf("%s=follower(leader %s, term %d)", s.m.name, nameOf(ids, s.leader), s.term)
}

func summary(sts []status) string {
	ids := names(sts)
	parts := make([]string, len(sts))
	for i, s := range sts {
		parts[i] = s.describe(ids)
	}
	return strings.Join(parts, " ")
}

// poll asks the engine for every member's container state and every
// running, non-paused member for its Status, all at the same time, each
// with a deadline of at most DefaultProbeTimeout.
func (c *Cluster) poll(ctx context.Context) []status {
	out := make([]status, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
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
			resp, err := m.Status(ctx)
			if err != nil {
				out[i].err = err
				return
			}
			if resp.Header != nil {
				out[i].memberID = resp.Header.MemberId
			}
			out[i].leader, out[i].term, out[i].errors = resp.Leader, resp.RaftTerm, resp.Errors
		})
	}
	wg.Wait()
	return out
}

// leaderOf returns the one member that says it is the leader, if every
// other member that names a leader names it.
func leaderOf(sts []status) (*Member, error) {
	var claims []string
	var leader *status
	for i, s := range sts {
		if s.claims() {
			claims = append(claims, s.m.name)
			leader = &sts[i]
		}
	}
	switch len(claims) {
	case 0:
		return nil, fmt.Errorf("no leader (%s)", summary(sts))
	case 1:
	default:
		return nil, fmt.Errorf("%d leaders %s (%s)", len(claims), strings.Join(claims, ","), summary(sts))
	}
	for _, s := range sts {
		if s.answered() && s.leader != 0 && s.leader != leader.memberID {
			return nil, fmt.Errorf("%s says it leads but %s names another leader (%s)", leader.m.name, s.m.name, summary(sts))
		}
	}
	return leader.m, nil
}

// Leader asks every running, non-paused member for its Status and returns
// the leader once exactly one member says so, no other names another, on
// stablePolls consecutive polls. It retries until ctx ends.
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	var cand *Member
	streak := 0
	var last error
	for {
		l, err := leaderOf(c.poll(ctx))
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

// Followers waits for a stable leader (see Leader) and returns the other
// members that then answer and name it.
func (c *Cluster) Followers(ctx context.Context) ([]*Member, error) {
	l, err := c.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("find followers: %w", err)
	}
	id := l.MemberID()
	var out []*Member
	for _, s := range c.poll(ctx) {
		if s.m != l && s.answered() && s.leader == id {
			out = append(out, s.m)
		}
	}
	return out, nil
}

// WaitHealthy waits until every running member answers its Status, none
// is paused, exactly one says it is the leader, all others name it, all
// are in the same raft term and none reports an alarm, the same on
// stablePolls consecutive polls. The error names the members that are not
// healthy. A member whose container is stopped (killed) does not count,
// as in harness/dockerzk.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	_, err := c.waitHealthy(ctx)
	return err
}

func (c *Cluster) waitHealthy(ctx context.Context) ([]*Member, error) {
	var cand *Member
	streak := 0
	for {
		sts := c.poll(ctx)
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
	ids := names(sts)
	var bad []*Member
	var probs []string
	running := 0
	var leader *status
	for i, s := range sts {
		if !s.running {
			continue
		}
		running++
		switch {
		case !s.answered():
			bad = append(bad, s.m)
			probs = append(probs, s.describe(ids))
		case len(s.errors) > 0:
			bad = append(bad, s.m)
			probs = append(probs, fmt.Sprintf("%s reports %s", s.m.name, strings.Join(s.errors, "; ")))
		case s.claims():
			if leader != nil {
				bad = append(bad, leader.m, s.m)
				probs = append(probs, fmt.Sprintf("two leaders %s and %s", leader.m.name, s.m.name))
			}
			leader = &sts[i]
		}
	}
	if running == 0 {
		return nil, nil, "no member running"
	}
	if leader == nil && len(probs) == 0 {
		probs = append(probs, "no leader ("+summary(sts)+")")
	}
	if len(probs) == 0 {
		for _, s := range sts {
			if !s.answered() || s.m == leader.m {
				continue
			}
			if s.leader != leader.memberID {
				bad = append(bad, s.m)
				probs = append(probs, fmt.Sprintf("%s names leader %s, not %s", s.m.name, nameOf(ids, s.leader), leader.m.name))
			} else if s.term != leader.term {
				bad = append(bad, s.m)
				probs = append(probs, fmt.Sprintf("%s is in term %d, leader %s in term %d", s.m.name, s.term, leader.m.name, leader.term))
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
