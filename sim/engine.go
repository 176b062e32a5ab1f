// Package sim is chaoslab's discrete-event simulator: a virtual clock, an
// event queue and seeded randomness, with no goroutine per simulated entity,
// so that one core runs millions of events per second. The same seed gives
// the same run, event for event.
//
// An event is a Handler and an int64 argument, stored by value in a 4-ary
// heap ordered by time and then by scheduling order (ties are FIFO, so runs
// do not depend on heap internals). Models keep their entities in slices
// and pass indexes as arguments, which keeps scheduling free of
// allocations.
package sim

import (
	"math"
	"math/rand/v2"
)

// Handler reacts to an event.
type Handler interface {
	Handle(s *Sim, arg int64)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(s *Sim, arg int64)

// Handle calls f.
func (f HandlerFunc) Handle(s *Sim, arg int64) { f(s, arg) }

type event struct {
	at  float64
	seq uint64
	h   Handler
	arg int64
}

func (a *event) before(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// Sim is one simulation run.
type Sim struct {
	now     float64
	q       []event
	seq     uint64
	events  uint64
	stopped bool
	// R is the run's random source (PCG seeded by New).
	R *rand.Rand
}

// New returns a simulation at time 0 with its random source seeded.
func New(seed uint64) *Sim {
	return &Sim{R: rand.New(rand.NewPCG(seed, 0x5eed_c4a0_5_1ab)), q: make([]event, 0, 1024)}
}

// Now is the virtual time, in seconds.
func (s *Sim) Now() float64 { return s.now }

// Events is the number of events handled so far.
func (s *Sim) Events() uint64 { return s.events }

// Pending is the number of events scheduled and not yet handled.
func (s *Sim) Pending() int { return len(s.q) }

// Schedule runs h with arg after delay seconds of virtual time (a negative
// or NaN delay counts as 0).
func (s *Sim) Schedule(delay float64, h Handler, arg int64) {
	if !(delay > 0) {
		delay = 0
	}
	s.push(event{at: s.now + delay, seq: s.seq, h: h, arg: arg})
	s.seq++
}

// At runs h with arg at time t (not before now).
func (s *Sim) At(t float64, h Handler, arg int64) { s.Schedule(t-s.now, h, arg) }

// Stop ends Run after the current event.
func (s *Sim) Stop() { s.stopped = true }

// Run handles events in time order until the queue is empty, Stop is
// called, or the next event is later than until; the clock then stands at
// until (or at the last event, when the queue ran dry earlier).
func (s *Sim) Run(until float64) {
	s.stopped = false
	for len(s.q) > 0 && !s.stopped {
		if s.q[0].at > until {
			break
		}
		e := s.pop()
		s.now = e.at
		s.events++
		e.h.Handle(s, e.arg)
	}
	if !s.stopped && until > s.now && !math.IsInf(until, 1) {
		s.now = until
	}
}

// Exp draws an exponential variate with the given mean.
func (s *Sim) Exp(mean float64) float64 { return s.R.ExpFloat64() * mean }

// Uniform draws from [lo, hi).
func (s *Sim) Uniform(lo, hi float64) float64 { return lo + s.R.Float64()*(hi-lo) }

// The 4-ary heap: shallower than a binary one, so fewer cache misses per
// push and pop.

func (s *Sim) push(e event) {
	s.q = append(s.q, e)
	i := len(s.q) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !s.q[i].before(&s.q[p]) {
			break
		}
		s.q[i], s.q[p] = s.q[p], s.q[i]
		i = p
	}
}

func (s *Sim) pop() event {
	top := s.q[0]
	n := len(s.q) - 1
	s.q[0] = s.q[n]
	s.q[n] = event{}
	s.q = s.q[:n]
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if s.q[k].before(&s.q[m]) {
				m = k
			}
		}
		if !s.q[m].before(&s.q[i]) {
			break
		}
		s.q[i], s.q[m] = s.q[m], s.q[i]
		i = m
	}
	return top
}
