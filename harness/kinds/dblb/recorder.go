package dblb

import (
	"math"
	"slices"
	"sync"
	"time"
)

// recorder counts the app's requests per second of the variant's clock.
type recorder struct {
	t0 time.Time
	mu sync.Mutex
	by map[int]*second
}

// second is one second's requests.
type second struct {
	primaryReads, replicaReads, writes, failed, requests int
	readMS                                               []float64
}

func newRecorder(t0 time.Time) *recorder { return &recorder{t0: t0, by: map[int]*second{}} }

// request records one request begun at began: a write or a read (sent to
// the primary or a replica), how long it took, and whether it succeeded.
// A request refused at once (the app's queue full) has took 0.
func (r *recorder) request(began time.Time, write, primary bool, took time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.second(began)
	s.requests++
	if !ok {
		s.failed++
	}
	switch {
	case write:
		s.writes++
		return
	case primary:
		s.primaryReads++
	default:
		s.replicaReads++
	}
	s.readMS = append(s.readMS, float64(took)/float64(time.Millisecond))
}

// sent records reads and writes a user's pods sent: to the primary as
// its proxies saw them, to a replica as it started them (no latency, no
// failure: those are the app's own view).
func (r *recorder) sent(at time.Time, primaryReads, replicaReads, writes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.second(at)
	s.primaryReads += primaryReads
	s.replicaReads += replicaReads
	s.writes += writes
}

// second is the second t falls in, made on first use; under r.mu.
func (r *recorder) second(t time.Time) *second {
	i := int(t.Sub(r.t0) / time.Second)
	s := r.by[i]
	if s == nil {
		s = &second{}
		r.by[i] = s
	}
	return s
}

// seconds are the recorded seconds in order, with their start on the clock.
func (r *recorder) seconds() (ts []int, ss []*second) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for t := range r.by {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	for _, t := range ts {
		ss = append(ss, r.by[t])
	}
	return ts, ss
}

// window sums the seconds that begin within [from, to).
type window struct {
	primaryReads, replicaReads, failed, requests int
	readMS                                       []float64
}

func (r *recorder) window(from, to float64) window {
	var w window
	ts, ss := r.seconds()
	for i, t := range ts {
		if float64(t) < from || float64(t) >= to {
			continue
		}
		s := ss[i]
		w.primaryReads += s.primaryReads
		w.replicaReads += s.replicaReads
		w.failed += s.failed
		w.requests += s.requests
		w.readMS = append(w.readMS, s.readMS...)
	}
	return w
}

func (w window) primaryShare() float64 {
	n := w.primaryReads + w.replicaReads
	if n == 0 {
		return math.NaN()
	}
	return float64(w.primaryReads) / float64(n)
}

func (w window) errorRate() float64 {
	if w.requests == 0 {
		return math.NaN()
	}
	return float64(w.failed) / float64(w.requests)
}

// quantile is the q-quantile of xs (nearest rank; NaN when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
