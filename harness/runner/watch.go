package runner

import (
	"context"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/progress"
)

// Defaults of the schedule before a variant has measured them.
const (
	setupGuess = 15 * time.Second
	tailGuess  = 5 * time.Second
	// logEvery is the period of the progress records in the log.
	logEvery = 15 * time.Second
)

// schedule is a variant's timing as the run learns it, read by the
// progress display from another goroutine.
type schedule struct {
	mu sync.Mutex
	// t0: the variant's start; work: its workload's; end: its timeline's
	// planned end, once the warm-up is over; done: its timeline's end.
	t0, work, end, done time.Time
	// first is the end as planned when the workload started.
	first time.Time
	// length and warm are the scenario's timeline and warm-up; setup and
	// tail what the servers' start and the teardown are expected to take.
	length, warm, setup, tail time.Duration
}

func (s *schedule) update(f func(s *schedule)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

// expectedEnd is when the variant should end, as known at now; never
// before now.
func (s *schedule) expectedEnd(now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var end time.Time
	switch {
	case s.work.IsZero():
		end = later(s.t0.Add(s.setup), now).Add(s.length)
	case s.end.IsZero():
		end = later(s.work.Add(s.warm), now).Add(s.length - s.warm)
	case s.done.IsZero():
		end = later(s.end, now)
	default:
		end = s.done
	}
	return later(end.Add(s.tail), now.Add(time.Second))
}

// late is how much later than first planned the variant expects to end.
func (s *schedule) late(end time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		return 0
	}
	return max(end.Sub(s.first), 0)
}

// finished says whether the timeline is over (the servers' samples are
// no longer a reading of the run).
func (s *schedule) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.done.IsZero()
}

// perVariant is what a variant not started yet is expected to take.
func (s *schedule) perVariant() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setup + s.length + s.tail
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// enter moves the variant to a phase: logged, and shown.
func (v *variant) enter(phase string) {
	v.phase.set(phase)
	v.log.Info("phase", "phase", phase)
	if v.o.Watch != nil {
		v.o.Watch.Phase(v.status())
	}
}

// status is where the variant is now.
func (v *variant) status() progress.Status {
	now := time.Now()
	end := v.sched.expectedEnd(now)
	st := progress.Status{
		Variant: v.name, Index: v.index + 1, Of: v.of, Phase: v.phase.get(),
		Elapsed: now.Sub(v.sched.t0), Total: end.Sub(v.sched.t0), Late: v.sched.late(end),
		Left: end.Sub(now) + time.Duration(v.of-v.index-1)*v.sched.perVariant(),
	}
	if s, ok := v.o.Steer.(Steering); ok {
		st.Steering = s.Steering()
	}
	v.mu.Lock()
	w, smp := v.work, v.smp
	v.mu.Unlock()
	if smp != nil && !v.sched.finished() {
		st.Leader = smp.leader()
		if sp, ok := v.p.sys.(lab.SystemProgress); ok {
			st.Figures = append(st.Figures, sp.Progress(smp.last())...)
		}
	}
	if w != nil {
		st.Figures = append(st.Figures, w.Progress()...)
	}
	return st
}

// progress shows the variant's status every second, and logs it now and
// then.
func (v *variant) progress(ctx context.Context) {
	defer v.p.catch("the progress display")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	logged := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := v.status()
		if v.o.Watch != nil {
			v.o.Watch.Update(st)
		}
		if time.Since(logged) >= logEvery {
			logged = time.Now()
			v.logStatus(st)
		}
	}
}

func (v *variant) logStatus(st progress.Status) {
	attrs := []any{"phase", st.Phase, "elapsed", progress.Clock(st.Elapsed), "of", progress.Clock(st.Total), "leader", st.Leader}
	for _, f := range st.Figures {
		attrs = append(attrs, f)
	}
	v.log.Info("progress", attrs...)
}

// leader is the leader as a stable reading: the one member that answered
// as leader in each of the last two rounds; "electing" when they differ
// or show none or several; "" before two rounds.
func (s *sampler) leader() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.rounds)
	if n < 2 {
		return ""
	}
	if a := leaderOf(s.rounds[n-1]); a != "" && a == leaderOf(s.rounds[n-2]) {
		return a
	}
	return "electing"
}

// leaderOf is the one member of a round that answered as leader ("" for
// none or several).
func leaderOf(round []lab.MemberSample) string {
	name := ""
	for _, m := range round {
		if m.OK && m.Role == lab.RoleLeader {
			if name != "" {
				return ""
			}
			name = m.Member
		}
	}
	return name
}
