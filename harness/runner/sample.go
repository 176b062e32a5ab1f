package runner

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// sampler reads the servers' own figures on a fixed period, one round of
// every member at a time.
type sampler struct {
	c     lab.Cluster
	every time.Duration

	mu     sync.Mutex
	rounds [][]lab.MemberSample
}

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		round := s.c.Sample(ctx)
		s.mu.Lock()
		s.rounds = append(s.rounds, round)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// last is the latest round.
func (s *sampler) last() []lab.MemberSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rounds) == 0 {
		return nil
	}
	return s.rounds[len(s.rounds)-1]
}

// record adds the servers' series (a member that did not answer is a
// gap), their role changes as events, and whether a leader answered.
func (s *sampler) record(r *lab.Result, defs []lab.SeriesDef) {
	s.mu.Lock()
	rounds := append([][]lab.MemberSample(nil), s.rounds...)
	s.mu.Unlock()
	units := map[string]string{}
	for _, d := range defs {
		units[d.Name] = d.Unit
	}
	roles := map[string]string{}
	// reported: the series each source has given a value of; a source
	// that does not answer is a gap only in those (a source of one
	// series, such as the servers' logs, is not one of every other).
	reported := map[[2]string]bool{}
	for _, round := range rounds {
		leader, t := 0.0, math.Inf(1)
		for _, m := range round {
			t = math.Min(t, m.T)
			for name, unit := range units {
				v := math.NaN()
				key := [2]string{name, m.Member}
				if m.OK {
					x, ok := m.Values[name]
					if !ok {
						continue
					}
					v, reported[key] = x, true
				} else if !reported[key] {
					continue
				}
				r.Add(name, m.Member, unit, m.T, v)
			}
			if m.OK && m.Role == lab.RoleLeader {
				leader = 1
			}
			if m.OK && roles[m.Member] != m.Role {
				if roles[m.Member] != "" || m.Role != "" {
					r.Events = append(r.Events, lab.Event{T: m.T, Kind: "state", Source: m.Member, Detail: "now " + m.Role})
				}
				roles[m.Member] = m.Role
			}
		}
		if len(round) > 0 {
			r.Add(lab.SeriesLeader, "cluster", "0/1", t, leader)
		}
	}
}
