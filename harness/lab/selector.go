package lab

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Selector picks the targets of a fault step:
//
//	leader | follower | observer | agent | server | member   one member of that role (member: any)
//	followers | observers | agents | servers | members      every member of that role
//	member:NAME                                             the member named NAME (zk2), or member:2
//	GROUP                                                   every member of a workload's group (clients, fleet)
//
// Any group takes a count after a colon: followers:2, agents:50%,
// clients:3, clients:all. Several matches are picked at random with the
// variant's seed. A role takes :untouched instead: one member of that
// role (followers:untouched: every one) that no earlier fault step of the
// variant targeted, as a rolling procedure's next step wants (replace a
// follower, then another).
type Selector struct {
	Raw string
	// Group is a role (singular), or a workload group.
	Group string
	// Member names one member (member:NAME).
	Member string
	// Count picks that many; Percent that share (rounded up); All every one.
	Count   int
	Percent float64
	All     bool
	// Untouched leaves out the members named in Touched (set by the
	// runner: the targets of the variant's earlier fault steps).
	Untouched bool
	Touched   []string
}

// memberGroups are the role groups every system understands.
var memberGroups = []string{"member", "any", "server"}

// ParseSelector reads a target selector. roles are the system's roles,
// groups the workload's target groups.
func ParseSelector(s string, roles, groups []string) (Selector, error) {
	sel := Selector{Raw: s}
	name, count, hasCount := strings.Cut(s, ":")
	if name == "member" && hasCount {
		if count == "" {
			return sel, errors.New("member: wants a name (member:zk2) or a number (member:2)")
		}
		sel.Group, sel.Member, sel.Count = "member", count, 1
		return sel, nil
	}
	single := slices.Contains(roles, name) || slices.Contains(memberGroups, name)
	plural := strings.HasSuffix(name, "s") && (slices.Contains(roles, strings.TrimSuffix(name, "s")) || slices.Contains(memberGroups, strings.TrimSuffix(name, "s")))
	group := slices.Contains(groups, name)
	switch {
	case single:
		sel.Group, sel.Count = name, 1
	case plural:
		sel.Group, sel.All = strings.TrimSuffix(name, "s"), true
	case group:
		sel.Group, sel.All = name, true
	default:
		known := append(append([]string{}, roles...), memberGroups...)
		for _, r := range append(roles, "member", "server") {
			known = append(known, r+"s")
		}
		known = append(known, groups...)
		return sel, fmt.Errorf("unknown target %q (known: %s, member:NAME, each with :N, :N%% or :all)", name, strings.Join(known, ", "))
	}
	if !hasCount {
		return sel, nil
	}
	if count == "untouched" {
		if group {
			return sel, fmt.Errorf("%s:untouched: only a role takes untouched, not a workload group", name)
		}
		sel.Untouched = true
		return sel, nil
	}
	sel.All, sel.Count = false, 0
	switch {
	case count == "all":
		sel.All = true
	case strings.HasSuffix(count, "%"):
		p, err := strconv.ParseFloat(strings.TrimSuffix(count, "%"), 64)
		if err != nil || p <= 0 || p > 100 {
			return sel, fmt.Errorf("%q: want a share above 0%% and at most 100%%", count)
		}
		sel.Percent = p
	default:
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return sel, fmt.Errorf("%q: want a count of at least 1, a share (50%%), all or untouched", count)
		}
		sel.Count = n
	}
	return sel, nil
}

// IsWorkload reports whether the selector picks a workload's group.
func (s Selector) IsWorkload(groups []string) bool { return slices.Contains(groups, s.Group) }

// Resolve finds the selector's targets now. A leader is the cluster's
// stable answer; other roles are asked of every running member.
func (s Selector) Resolve(ctx context.Context, c Cluster, w Workload, groups []string, r *rand.Rand) ([]Target, error) {
	var cands []Target
	switch {
	case s.IsWorkload(groups):
		cands = w.Targets(s.Group)
	case s.Member != "":
		m, err := memberNamed(c, s.Member)
		if err != nil {
			return nil, err
		}
		return []Target{m}, nil
	case s.Group == RoleLeader:
		l, err := c.Leader(ctx)
		if err != nil {
			return nil, fmt.Errorf("find the leader: %w", err)
		}
		cands = []Target{l}
	default:
		ms, err := membersWithRole(ctx, c, s.Group)
		if err != nil {
			return nil, err
		}
		cands = ms
	}
	if s.Untouched {
		cands = slices.DeleteFunc(cands, func(t Target) bool { return slices.Contains(s.Touched, t.Name()) })
		if len(cands) == 0 {
			return nil, fmt.Errorf("select %s: every %s now was targeted by an earlier step (%s)", s.Raw, s.Group, strings.Join(s.Touched, ", "))
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("select %s: no %s now", s.Raw, s.Group)
	}
	return s.pick(cands, r), nil
}

func (s Selector) pick(cands []Target, r *rand.Rand) []Target {
	n := s.Count
	switch {
	case s.All:
		n = len(cands)
	case s.Percent > 0:
		n = int(math.Ceil(float64(len(cands)) * s.Percent / 100))
	}
	n = min(max(n, 1), len(cands))
	idx := r.Perm(len(cands))[:n]
	slices.Sort(idx)
	out := make([]Target, n)
	for i, j := range idx {
		out[i] = cands[j]
	}
	return out
}

func memberNamed(c Cluster, name string) (Member, error) {
	ms := c.Members()
	for _, m := range ms {
		if m.Name() == name {
			return m, nil
		}
	}
	if i, err := strconv.Atoi(name); err == nil && i >= 1 && i <= len(ms) {
		return ms[i-1], nil
	}
	return nil, fmt.Errorf("select member:%s: no such member", name)
}

// membersWithRole lists the running members whose role matches: member and
// any match every member, server every member that is not an agent.
func membersWithRole(ctx context.Context, c Cluster, role string) ([]Target, error) {
	var out []Target
	for _, m := range c.Members() {
		if role == "member" || role == "any" {
			out = append(out, m)
			continue
		}
		if !m.Running() || m.Paused() {
			continue
		}
		got, err := m.Role(ctx)
		if err != nil {
			continue
		}
		if got == role || (role == "server" && got != RoleAgent) {
			out = append(out, m)
		}
	}
	return out, nil
}
