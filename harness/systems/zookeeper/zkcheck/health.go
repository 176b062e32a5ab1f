package zkcheck

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
// StablePolls consecutive polls PollInterval apart (just after a paused
// leader is resumed two servers both say "leader" for about a second).
const (
	StablePolls  = 3
	PollInterval = 300 * time.Millisecond
)

// Status is one member's answer in one poll.
type Status[M comparable] struct {
	M       M
	Running bool
	Paused  bool
	KV      map[string]string // mntr's answer
	State   string            // zk_server_state
	Err     error
}

// Ensemble is what the rules need of an ensemble: its members and, for a
// member, its name, its ID (the order of the unhealthy members), whether
// it runs and is paused, and its mntr answer.
type Ensemble[M comparable] struct {
	Members func() []M
	Name    func(M) string
	ID      func(M) int
	// RunState tells whether the member runs and whether it is paused.
	RunState func(ctx context.Context, m M) (running, paused bool)
	// Mntr asks the member for mntr within the deadline of ctx.
	Mntr func(ctx context.Context, m M) (map[string]string, error)
}

func (e Ensemble[M]) describe(s Status[M]) string {
	name := e.Name(s.M)
	switch {
	case !s.Running:
		return name + "=not running"
	case s.Paused:
		return name + "=paused"
	case s.Err != nil:
		if errors.Is(s.Err, ErrNotServing) {
			return name + "=not serving"
		}
		return name + "=error(" + s.Err.Error() + ")"
	}
	return name + "=" + s.State
}

// Poll asks for every member's run state and every running, non-paused
// member for mntr, all at the same time, each with a deadline of at most
// DefaultProbeTimeout.
func (e Ensemble[M]) Poll(ctx context.Context) []Status[M] {
	ms := e.Members()
	out := make([]Status[M], len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		out[i] = Status[M]{M: m}
		wg.Go(func() {
			out[i].Running, out[i].Paused = e.RunState(ctx, m)
			if !out[i].Running || out[i].Paused {
				return
			}
			pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
			defer cancel()
			kv, err := e.Mntr(pctx, m)
			out[i].KV, out[i].Err = kv, err
			if err == nil {
				out[i].State = kv["zk_server_state"]
			}
		})
	}
	wg.Wait()
	return out
}

// Summary describes a poll: "name=state ..." for every member.
func (e Ensemble[M]) Summary(sts []Status[M]) string {
	parts := make([]string, len(sts))
	for i, s := range sts {
		parts[i] = e.describe(s)
	}
	return strings.Join(parts, " ")
}

// LeaderOf returns the one member that says leader (or standalone).
func (e Ensemble[M]) LeaderOf(sts []Status[M]) (M, error) {
	var zero M
	var leaders []string
	var leader M
	for _, s := range sts {
		if s.Err == nil && (s.State == StateLeader || s.State == StateStandalone) {
			leaders = append(leaders, e.Name(s.M))
			leader = s.M
		}
	}
	switch len(leaders) {
	case 1:
		return leader, nil
	case 0:
		return zero, fmt.Errorf("no leader (%s)", e.Summary(sts))
	}
	return zero, fmt.Errorf("%d leaders %s (%s)", len(leaders), strings.Join(leaders, ","), e.Summary(sts))
}

// Leader asks every running, non-paused member for its state and returns
// the leader once exactly one member says so on StablePolls consecutive
// polls. It retries until ctx ends.
func (e Ensemble[M]) Leader(ctx context.Context) (M, error) {
	var zero, cand M
	streak := 0
	var last error
	for {
		l, err := e.LeaderOf(e.Poll(ctx))
		switch {
		case err != nil:
			cand, streak, last = zero, 0, err
		case l == cand:
			streak++
		default:
			cand, streak = l, 1
		}
		if streak >= StablePolls {
			return cand, nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("leader not yet stable")
			}
			return zero, fmt.Errorf("find leader: %w: %w", last, ctx.Err())
		case <-time.After(PollInterval):
		}
	}
}

// Followers waits for a stable leader (see Leader) and returns the members
// that then report "follower".
func (e Ensemble[M]) Followers(ctx context.Context) ([]M, error) {
	l, err := e.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("find followers: %w", err)
	}
	var out []M
	for _, s := range e.Poll(ctx) {
		if s.M != l && s.Err == nil && s.State == StateFollower {
			out = append(out, s.M)
		}
	}
	return out, nil
}

// WaitHealthy waits until every running member answers mntr, none is
// paused, exactly one is leader and all others follow (and the leader
// counts them as synced), the same on StablePolls consecutive polls. On
// failure it returns the members that are not healthy and an error naming
// them.
func (e Ensemble[M]) WaitHealthy(ctx context.Context) ([]M, error) {
	var zero, cand M
	streak := 0
	for {
		sts := e.Poll(ctx)
		l, bad, problem := e.Health(sts)
		switch {
		case problem != "":
			cand, streak = zero, 0
		case l == cand:
			streak++
		default:
			cand, streak = l, 1
		}
		if streak >= StablePolls {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			if problem == "" {
				problem = "leader " + e.Name(l) + " not yet stable"
			}
			return bad, fmt.Errorf("wait healthy: %s: %w", problem, ctx.Err())
		case <-time.After(PollInterval):
		}
	}
}

// Health judges one poll: it returns the leader, or the members that are
// not healthy (ordered by ID) and a description. A member that does not
// run does not count.
func (e Ensemble[M]) Health(sts []Status[M]) (M, []M, string) {
	var zero M
	var bad []M
	var probs []string
	running, followers, observers := 0, 0, 0
	var leader *Status[M]
	for i, s := range sts {
		if !s.Running {
			continue
		}
		running++
		switch {
		case s.Paused, s.Err != nil:
			bad = append(bad, s.M)
			probs = append(probs, e.describe(s))
		case s.State == StateLeader || s.State == StateStandalone:
			if leader != nil {
				bad = append(bad, leader.M, s.M)
				probs = append(probs, fmt.Sprintf("two leaders %s and %s", e.Name(leader.M), e.Name(s.M)))
			}
			leader = &sts[i]
		case s.State == StateFollower:
			followers++
		case s.State == StateObserver:
			observers++
		default:
			bad = append(bad, s.M)
			probs = append(probs, e.describe(s))
		}
	}
	if running == 0 {
		return zero, nil, "no member running"
	}
	if leader == nil && len(probs) == 0 {
		probs = append(probs, "no leader ("+e.Summary(sts)+")")
	}
	if len(probs) == 0 && leader.State == StateLeader {
		for _, c := range []struct {
			key, what string
			n         int
		}{{"zk_synced_followers", "follow", followers}, {"zk_synced_observers", "observe", observers}} {
			if synced, ok := SyncedCount(leader.KV, c.key); ok && synced < c.n {
				bad = append(bad, leader.M)
				probs = append(probs, fmt.Sprintf("%s: leader has %d %s, %d members %s", e.Name(leader.M), synced, strings.ReplaceAll(strings.TrimPrefix(c.key, "zk_"), "_", " "), c.n, c.what))
			}
		}
	}
	if len(probs) > 0 {
		sort.Slice(bad, func(i, j int) bool { return e.ID(bad[i]) < e.ID(bad[j]) })
		return zero, dedup(bad), strings.Join(probs, "; ")
	}
	return leader.M, nil, ""
}

// SyncedCount reads one of a leader's mntr counts of synced learners
// (zk_synced_followers, zk_synced_observers); ok is false when the
// server does not report it.
func SyncedCount(kv map[string]string, key string) (int, bool) {
	v, ok := kv[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, false
	}
	return n, true
}

func dedup[M comparable](ms []M) []M {
	out := ms[:0]
	for i, m := range ms {
		if i == 0 || m != ms[i-1] {
			out = append(out, m)
		}
	}
	return out
}
