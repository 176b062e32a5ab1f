package consul

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// Polling of WaitHealthy: an answer counts once it was seen on
// stablePolls polls in a row, pollInterval apart, each within
// probeTimeout.
const (
	stablePolls  = 2
	pollInterval = 100 * time.Millisecond
	probeTimeout = time.Second
)

// answer is one node's answers in one poll.
type answer struct {
	m       *member
	running bool
	paused  bool
	leader  string             // the raft address it names ("": none)
	members []*api.AgentMember // servers only
	err     error
}

func (a answer) ok() bool { return a.running && !a.paused && a.err == nil }

func (a answer) String() string {
	switch {
	case !a.running:
		return a.m.Name() + " not running"
	case a.paused:
		return a.m.Name() + " paused"
	case a.err != nil:
		return a.err.Error()
	case a.leader == "":
		return a.m.Name() + " knows no leader"
	}
	return a.m.Name() + " names leader " + a.leader
}

// poll asks every running node for the leader it names and every server
// for its LAN members, all at once.
func (c *cluster) poll(ctx context.Context) []answer {
	out := make([]answer, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		out[i] = answer{m: m, running: m.Running(), paused: m.Paused()}
		if !out[i].running || out[i].paused {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			var lerr, merr error
			out[i].leader, lerr = c.leaderAddr(pctx, m)
			if m.server {
				out[i].members, merr = c.lanMembers(m)
			}
			if lerr != nil {
				lerr = fmt.Errorf("%s: leader: %w", m.Name(), lerr)
			}
			out[i].err = errors.Join(lerr, merr)
		})
	}
	wg.Wait()
	return out
}

// lanMembers is a node's LAN member list.
func (c *cluster) lanMembers(m *member) ([]*api.AgentMember, error) {
	cl, err := c.client(m)
	if err != nil {
		return nil, err
	}
	ms, err := cl.Agent().Members(false)
	if err != nil {
		return nil, fmt.Errorf("%s: members: %w", m.Name(), err)
	}
	return ms, nil
}

// judge says what is wrong in one poll ("" healthy): every node answers,
// none is paused, all name the same leader, one of the servers, and
// every server lists every node alive.
func (c *cluster) judge(as []answer) string {
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
			probs = append(probs, fmt.Sprintf("%s names leader %s, another %s", a.m.Name(), a.leader, leader))
		}
	}
	if leader != "" && c.serverAt(leader) == nil {
		probs = append(probs, "leader "+leader+" is none of the servers")
	}
	for _, a := range as {
		if a.ok() && a.m.server {
			probs = append(probs, seesAll(a, as)...)
		}
	}
	return strings.Join(probs, "; ")
}

// seesAll: what server a's member list lacks of the nodes of as.
func seesAll(a answer, as []answer) []string {
	seen := map[string]int{}
	for _, m := range a.members {
		seen[m.Name] = m.Status
	}
	var missing []string
	for _, o := range as {
		switch st, ok := seen[o.m.Name()]; {
		case !ok:
			missing = append(missing, o.m.Name()+" unknown")
		case st != memberAlive:
			missing = append(missing, o.m.Name()+" "+memberStatus(st))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s sees %s", a.m.Name(), strings.Join(missing, ", "))}
}

// serverAt is the server whose raft address is addr, or nil.
func (c *cluster) serverAt(addr string) *member {
	for _, m := range c.members {
		if m.server && m.raftAddr() == addr {
			return m
		}
	}
	return nil
}

// WaitHealthy waits until every node runs and is not paused, names the
// same leader, one of the servers, and every server lists every node
// alive, on stablePolls polls in a row. It returns at once when a node's
// process is not running (restart it first).
func (c *cluster) WaitHealthy(ctx context.Context) error {
	streak := 0
	last := "not polled yet"
	for {
		for _, m := range c.members {
			if !m.Running() {
				return fmt.Errorf("wait healthy: %s is not running", m.Name())
			}
		}
		if p := c.judge(c.poll(ctx)); p == "" {
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
