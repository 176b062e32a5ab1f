package runner

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
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
	for _, round := range rounds {
		leader, t := 0.0, math.Inf(1)
		for _, m := range round {
			t = math.Min(t, m.T)
			for name, unit := range units {
				v := math.NaN()
				if m.OK {
					if x, ok := m.Values[name]; ok {
						v = x
					} else {
						continue
					}
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

// progress logs a line every few seconds so a long run shows where it is.
func (v *variant) progress(ctx context.Context, w lab.Workload, smp *sampler) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	total := v.p.s.RunLength().Round(time.Second)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		el := time.Duration(v.env.Now() * float64(time.Second)).Round(time.Second)
		attrs := []any{"phase", v.phase.get(), "variant", fmt.Sprintf("%d/%d", v.index+1, v.of)}
		for _, a := range w.Progress() {
			attrs = append(attrs, a)
		}
		attrs = append(attrs, slog.String("servers", states(smp.last())))
		v.log.Info(fmt.Sprintf("progress %s of ~%s", el, total), attrs...)
	}
}

func states(round []lab.MemberSample) string {
	var st []string
	for _, m := range round {
		role := m.Role
		if !m.OK {
			role = "no-answer"
		}
		st = append(st, m.Member+"="+role)
	}
	sort.Strings(st)
	return strings.Join(st, " ")
}
