package fleet

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Event puts an event on the variant's timeline (faults.EventRecorder).
func (f *Fleet) Event(kind, source, detail string) { f.event(kind, source, detail) }

// Size is how many servers are part of the fleet, and how many of those
// the capacity addition added.
func (f *Fleet) Size() (active, added int) {
	for _, s := range f.Active() {
		active++
		if s.Added {
			added++
		}
	}
	return active, added
}

// RemoveServers stops n servers and takes them out of the fleet for good:
// the added ones first, then the originals, the newest first. It returns
// their names.
func (f *Fleet) RemoveServers(ctx context.Context, n int) ([]string, error) {
	act := f.Active()
	slices.SortStableFunc(act, func(a, b *Server) int {
		if a.Added != b.Added {
			if a.Added {
				return -1
			}
			return 1
		}
		return b.Index - a.Index
	})
	act = act[:min(n, len(act))]
	var names []string
	var wg sync.WaitGroup
	for _, s := range act {
		s.mu.Lock()
		s.retired = true
		s.mu.Unlock()
		names = append(names, s.ID)
		wg.Go(func() { f.stop(s, "capacity removed by the operator", 5*time.Second) })
	}
	wg.Wait()
	return names, ctx.Err()
}

// Threads is the most and the mean OS threads of the fleet's running
// servers at their last health check, and the thread limit (0: none).
func (f *Fleet) Threads() (most int, mean float64, limit int) {
	n, sum := 0, 0
	for _, s := range f.Active() {
		s.mu.Lock()
		if k := len(s.samples); s.proc != nil && k > 0 && s.samples[k-1].Up {
			th := s.samples[k-1].Threads
			most, sum, n = max(most, th), sum+th, n+1
		}
		s.mu.Unlock()
	}
	if n > 0 {
		mean = float64(sum) / float64(n)
	}
	return most, mean, f.cfg.ThreadLimit
}

var _ CapacityRemover = (*Fleet)(nil)

// Procs is, for each server of the fleet, its last process ("pid 123",
// "container NAME"), whether it runs now and how many times it was
// started: what the capacity and restart faults read back to show they
// landed.
func (f *Fleet) Procs() map[string]ServerProc {
	out := map[string]ServerProc{}
	for _, s := range f.Servers() {
		s.mu.Lock()
		sp := ServerProc{Desc: s.desc, Starts: s.starts}
		if s.proc != nil {
			select {
			case <-s.proc.Done():
			default:
				sp.Running = true
			}
		}
		s.mu.Unlock()
		out[s.ID] = sp
	}
	return out
}
