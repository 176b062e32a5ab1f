package dockerconsul

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// Polling of Leader and WaitHealthy: an answer counts once it was seen on
// stablePolls consecutive polls pollInterval apart (as in harness/dockerzk).
const (
	stablePolls  = 3
	pollInterval = 250 * time.Millisecond
)

// status is one node's answers in one poll.
type status struct {
	n       *Node
	running bool
	paused  bool
	leader  string // raft leader address the node names ("" none)
	members []*api.AgentMember
	err     error
}

// answered reports whether the node answered both questions.
func (s status) answered() bool { return s.running && !s.paused && s.err == nil }

func (s status) String() string {
	switch {
	case !s.running:
		return s.n.name + "=not running"
	case s.paused:
		return s.n.name + "=paused"
	case s.err != nil:
		return s.n.name + "=error(" + s.err.Error() + ")"
	case s.leader == "":
		return s.n.name + "=no leader"
	}
	return s.n.name + "=leader " + s.leader
}

func summary(sts []status) string {
	parts := make([]string, len(sts))
	for i, s := range sts {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// poll asks the engine for every node's container state and every
// running, non-paused node for the leader it names and its member list,
// all at the same time, each with a deadline of at most DefaultProbeTimeout.
func (c *Cluster) poll(ctx context.Context) []status {
	nodes := c.Nodes()
	out := make([]status, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		out[i] = status{n: n}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := n.State(sctx)
			cancel()
			if err != nil {
				return // not running (no container)
			}
			out[i].running, out[i].paused = st.Running, st.Paused
			if !st.Running || st.Paused {
				return
			}
			var lerr, merr error
			var inner sync.WaitGroup
			inner.Go(func() { out[i].leader, lerr = n.Leader(ctx) })
			inner.Go(func() { out[i].members, merr = n.Members(ctx) })
			inner.Wait()
			out[i].err = errors.Join(lerr, merr)
		})
	}
	wg.Wait()
	return out
}

// serverAt returns the server whose address on the run network is the
// host of a raft address ("ip:8300"), among the polled nodes.
func serverAt(sts []status, raftAddr string) *status {
	ap, err := netip.ParseAddrPort(raftAddr)
	if err != nil {
		return nil
	}
	for i, s := range sts {
		if s.n.server && s.n.IP() == ap.Addr() {
			return &sts[i]
		}
	}
	return nil
}

// leaderOf returns the server every answering server names as leader, if
// that server answers too.
func leaderOf(sts []status) (*Node, error) {
	l, _, err := leaderAddrOf(sts)
	return l, err
}

// leaderAddrOf is leaderOf, with the leader's raft address.
func leaderAddrOf(sts []status) (*Node, string, error) {
	addr := ""
	for _, s := range sts {
		if !s.n.server || !s.answered() {
			continue
		}
		switch {
		case s.leader == "":
			return nil, "", fmt.Errorf("no leader (%s)", summary(sts))
		case addr == "":
			addr = s.leader
		case s.leader != addr:
			return nil, "", fmt.Errorf("servers name different leaders (%s)", summary(sts))
		}
	}
	if addr == "" {
		return nil, "", fmt.Errorf("no server answers (%s)", summary(sts))
	}
	l := serverAt(sts, addr)
	switch {
	case l == nil:
		return nil, "", fmt.Errorf("leader %s is none of the servers (%s)", addr, summary(sts))
	case !l.answered():
		return nil, "", fmt.Errorf("leader %s (%s) does not answer (%s)", l.n.name, addr, summary(sts))
	}
	return l.n, addr, nil
}

// Leader asks every running, non-paused server which server leads and
// returns it once all name the same one, and it answers too, on
// stablePolls consecutive polls. It retries until ctx ends.
func (c *Cluster) Leader(ctx context.Context) (*Node, error) {
	var cand *Node
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

// WaitHealthy waits until every running node (server or agent) answers,
// none is paused, all name the same leader, a server that answers too,
// and every node lists every running node alive (serf status 1) in
// /v1/agent/members, the same on stablePolls consecutive polls. The error
// names the nodes that are not healthy. A node whose container is stopped
// (killed, or OOM-killed) does not count, as in harness/dockerzk; the
// others then list it as failed, which is no problem.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	_, err := c.waitHealthy(ctx)
	return err
}

func (c *Cluster) waitHealthy(ctx context.Context) ([]*Node, error) {
	var cand *Node
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

// health judges one poll: it returns the leader, or the nodes that are
// not healthy and a description.
func health(sts []status) (*Node, []*Node, string) {
	var bad []*Node
	var probs []string
	running := map[string]bool{}
	for _, s := range sts {
		if !s.running {
			continue
		}
		running[s.n.name] = true
		if !s.answered() {
			bad = append(bad, s.n)
			probs = append(probs, s.String())
		}
	}
	if len(running) == 0 {
		return nil, nil, "no node running"
	}
	var leader *Node
	if len(probs) == 0 {
		l, addr, err := leaderAddrOf(sts)
		if err != nil {
			probs = append(probs, err.Error())
		} else {
			leader = l
			for _, s := range sts {
				if s.answered() && s.leader != addr {
					bad = append(bad, s.n)
					probs = append(probs, fmt.Sprintf("%s names leader %q", s.n.name, s.leader))
				}
			}
		}
	}
	// Every answering node lists every running node alive.
	for _, s := range sts {
		if !s.answered() {
			continue
		}
		seen := map[string]int{}
		for _, m := range s.members {
			seen[m.Name] = m.Status
		}
		var missing []string
		for _, o := range sts {
			if !running[o.n.name] {
				continue
			}
			st, ok := seen[o.n.name]
			switch {
			case !ok:
				missing = append(missing, o.n.name+" unknown")
			case st != MemberAlive:
				missing = append(missing, fmt.Sprintf("%s %s", o.n.name, memberStatus(st)))
			}
		}
		if len(missing) > 0 {
			bad = append(bad, s.n)
			probs = append(probs, fmt.Sprintf("%s sees %s", s.n.name, strings.Join(missing, ", ")))
		}
	}
	if len(probs) > 0 {
		return nil, dedup(bad), strings.Join(probs, "; ")
	}
	return leader, nil, ""
}

// memberStatus names a serf member status.
func memberStatus(st int) string {
	switch st {
	case MemberAlive:
		return "alive"
	case MemberLeaving:
		return "leaving"
	case MemberLeft:
		return "left"
	case MemberFailed:
		return "failed"
	}
	return fmt.Sprintf("status %d", st)
}

func dedup(ns []*Node) []*Node {
	seen := map[*Node]bool{}
	out := ns[:0]
	for _, n := range ns {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].server != out[j].server {
			return out[i].server
		}
		return out[i].id < out[j].id
	})
	return out
}
