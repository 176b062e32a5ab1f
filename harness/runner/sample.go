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
// gap), their role changes as events, and the pipeline's own series
// (roundState.add).
func (s *sampler) record(r *lab.Result, defs []lab.SeriesDef) {
	s.mu.Lock()
	rounds := append([][]lab.MemberSample(nil), s.rounds...)
	s.mu.Unlock()
	units := map[string]string{}
	for _, d := range defs {
		units[d.Name] = d.Unit
	}
	st, roles := newRoundState(units), map[string]string{}
	for _, round := range rounds {
		st.add(r, round)
		for _, m := range round {
			if m.OK && roles[m.Member] != m.Role {
				if roles[m.Member] != "" || m.Role != "" {
					r.Events = append(r.Events, lab.Event{T: m.T, Kind: "state", Source: m.Member, Detail: "now " + m.Role})
				}
				roles[m.Member] = m.Role
			}
		}
	}
}

// roundState turns sample rounds into series, one round at a time, for
// the report and for the journal alike.
type roundState struct {
	units map[string]string
	// reported: the series each source has given a value of; a source
	// that does not answer is a gap only in those (a source of one
	// series, such as the servers' logs, is not one of every other).
	reported map[[2]string]bool
	// voters: the members seen leading or following in any round so far.
	voters map[string]bool
}

func newRoundState(units map[string]string) *roundState {
	return &roundState{units: units, reported: map[[2]string]bool{}, voters: map[string]bool{}}
}

// add records one round: each member's values, whether a leader answered
// (lab.SeriesLeader) and whether a majority of the voters served
// (lab.SeriesQuorum: answered as leader or follower; a member that syncs
// or is in an election does not).
func (st *roundState) add(r *lab.Result, round []lab.MemberSample) {
	leader, serving, t := 0.0, 0, math.Inf(1)
	for _, m := range round {
		t = math.Min(t, m.T)
		st.values(r, m)
		if !m.OK {
			continue
		}
		switch m.Role {
		case lab.RoleLeader:
			leader = 1
			fallthrough
		case lab.RoleFollower:
			st.voters[m.Member] = true
			serving++
		}
	}
	if len(round) == 0 {
		return
	}
	r.Add(lab.SeriesLeader, "cluster", "0/1", t, leader)
	quorum := 0.0
	if serving > 0 && serving >= len(st.voters)/2+1 {
		quorum = 1
	}
	r.Add(lab.SeriesQuorum, "cluster", "0/1", t, quorum)
}

// values adds a member's values of the system's series.
func (st *roundState) values(r *lab.Result, m lab.MemberSample) {
	for name, unit := range st.units {
		key := [2]string{name, m.Member}
		x, ok := m.Values[name]
		switch {
		case m.OK && ok:
			st.reported[key] = true
		case !m.OK && st.reported[key]:
			x = math.NaN()
		default:
			continue
		}
		r.Add(name, m.Member, unit, m.T, x)
	}
}
