package consullocal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// Polling of WaitHealthy and Leader: an answer counts once it was seen on
// stablePolls consecutive polls pollInterval apart.
const (
	stablePolls  = 2
	pollInterval = 100 * time.Millisecond
)

// Serf member statuses of /v1/agent/members (serf.MemberStatus).
const (
	MemberAlive   = 1
	MemberLeaving = 2
	MemberLeft    = 3
	MemberFailed  = 4
)

// answer is one node's answers in one poll.
type answer struct {
	n       *Node
	running bool
	paused  bool
	leader  string             // raft address the node names ("": none)
	members []*api.AgentMember // servers only, when asked
	err     error
}

func (a answer) ok() bool { return a.running && !a.paused && a.err == nil }

func (a answer) String() string {
	switch {
	case !a.running:
		return a.n.name + " not running"
	case a.paused:
		return a.n.name + " paused"
	case a.err != nil:
		return a.err.Error()
	case a.leader == "":
		return a.n.name + " knows no leader"
	}
	return a.n.name + " names leader " + a.leader
}

// poll asks every node of nodes that runs and is not paused for the leader
// it names and, if members and it is a server, for its LAN members, all at
// once, each within probeTimeout.
func poll(ctx context.Context, nodes []*Node, members bool) []answer {
	out := make([]answer, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		out[i] = answer{n: n, running: n.Running(), paused: n.Paused()}
		if !out[i].running || out[i].paused {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			var lerr, merr error
			var inner sync.WaitGroup
			inner.Go(func() { out[i].leader, lerr = n.LeaderAddr(pctx) })
			if members && n.server {
				inner.Go(func() { out[i].members, merr = n.Members(pctx) })
			}
			inner.Wait()
			out[i].err = errors.Join(lerr, merr)
		})
	}
	wg.Wait()
	return out
}

// serverAt returns the server whose ServerAddr is addr, or nil.
func (c *Cluster) serverAt(addr string) *Node {
	for _, s := range c.servers {
		if s.ServerAddr() == addr {
			return s
		}
	}
	return nil
}

// judge returns the problems of one poll for WaitHealthy ("" healthy):
// every node answers, none is paused, all name the same leader, one of
// the servers, and every server lists every node alive.
func (c *Cluster) judge(as []answer) string {
	var probs []string
	leader := ""
	for _, a := range as {
		if !a.ok() || a.leader == "" {
			probs = append(probs, a.String())
			continue
		}
		switch {
		case leader == "":
			leader = a.leader
		case a.leader != leader:
			probs = append(probs, fmt.Sprintf("%s names leader %s, another %s", a.n.name, a.leader, leader))
		}
	}
	if leader != "" && c.serverAt(leader) == nil {
		probs = append(probs, "leader "+leader+" is none of the servers")
	}
	for _, a := range as {
		if !a.ok() || !a.n.server {
			continue
		}
		seen := map[string]int{}
		for _, m := range a.members {
			seen[m.Name] = m.Status
		}
		var missing []string
		for _, o := range as {
			switch st, ok := seen[o.n.name]; {
			case !ok:
				missing = append(missing, o.n.name+" unknown")
			case st != MemberAlive:
				missing = append(missing, o.n.name+" "+memberStatus(st))
			}
		}
		if len(missing) > 0 {
			probs = append(probs, fmt.Sprintf("%s sees %s", a.n.name, strings.Join(missing, ", ")))
		}
	}
	return strings.Join(probs, "; ")
}

// WaitHealthy waits until every node runs and is not paused, answers
// /v1/status/leader with the same leader, one of the servers, and every
// server lists every node (servers and agents) alive in its LAN member
// list, on stablePolls consecutive polls pollInterval apart. It returns
// at once, with the end of its output, if a node's process is not running
// (killed, crashed or OOM-killed: Restart it first).
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	streak := 0
	last := "not polled yet"
	for {
		for _, n := range c.Nodes() {
			if err := n.exited(); err != nil {
				return fmt.Errorf("wait healthy: %w", err)
			}
		}
		if p := c.judge(poll(ctx, c.Nodes(), true)); p == "" {
			if streak++; streak >= stablePolls {
				return nil
			}
		} else {
			streak, last = 0, p
		}
		select {
		case <-ctx.Done():
			if streak > 0 {
				last = "healthy, not yet stable"
			}
			return fmt.Errorf("wait healthy: %s: %w", last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Leader returns the server that leads: every running, non-paused server
// that answers names it, it is one of them, and it answers too, on
// stablePolls consecutive polls. Paused and stopped servers are not asked
// (a paused leader still thinks it leads when it resumes). It retries
// until ctx ends.
func (c *Cluster) Leader(ctx context.Context) (*Node, error) {
	var cand *Node
	streak := 0
	var last error
	for {
		l, err := c.leaderOf(poll(ctx, c.servers, false))
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

// leaderOf judges one poll of the servers for Leader.
func (c *Cluster) leaderOf(as []answer) (*Node, error) {
	addr := ""
	var summary []string
	byNode := map[*Node]answer{}
	for _, a := range as {
		summary = append(summary, a.String())
		byNode[a.n] = a
	}
	for _, a := range as {
		if !a.ok() {
			continue
		}
		switch {
		case a.leader == "":
			return nil, fmt.Errorf("no leader (%s)", strings.Join(summary, "; "))
		case addr == "":
			addr = a.leader
		case a.leader != addr:
			return nil, fmt.Errorf("servers name different leaders (%s)", strings.Join(summary, "; "))
		}
	}
	if addr == "" {
		return nil, fmt.Errorf("no server answers (%s)", strings.Join(summary, "; "))
	}
	l := c.serverAt(addr)
	if l == nil {
		return nil, fmt.Errorf("leader %s is none of the servers", addr)
	}
	if a, ok := byNode[l]; !ok || !a.ok() {
		return nil, fmt.Errorf("leader %s (%s) does not answer (%s)", l.name, addr, strings.Join(summary, "; "))
	}
	return l, nil
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
