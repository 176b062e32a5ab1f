package consulload

import (
	"context"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Sample is the agent's memory at one moment.
type Sample struct {
	At time.Duration // since the recorder started
	// ChargedBytes is what its cgroup (or its container's) charges now
	// (v1 memory.usage_in_bytes, v2 memory.current), PeakBytes the most
	// it ever charged so far (max_usage_in_bytes, memory.peak).
	ChargedBytes int64
	PeakBytes    int64
	// RSSBytes is the agent's resident set from /proc (0 while it is
	// dead); it includes the binary's file pages, which the cgroup may
	// not be charged for.
	RSSBytes int64
	// OOMKills are the agent's processes that ended OOM-killed so far, by
	// the kernel's counters.
	OOMKills uint64
}

// Record samples the agent's process (proc: its latest, nil when none)
// every period until ctx ends, and returns the samples.
func Record(ctx context.Context, proc func() lab.Proc, every time.Duration) []Sample {
	t := time.NewTicker(every)
	defer t.Stop()
	began := time.Now()
	var out []Sample
	var peak int64
	killed := map[lab.Proc]bool{}
	for {
		s := Sample{At: time.Since(began)}
		if p := proc(); p != nil {
			st := p.Stats()
			s.ChargedBytes, s.RSSBytes = st.MemoryChargedBytes, st.RSSBytes
			select {
			case <-p.Done():
				s.RSSBytes = 0
				if p.Exit().OOM {
					killed[p] = true
				}
			default:
			}
		}
		if p := proc(); p != nil {
			peak = max(peak, p.Stats().MemoryPeakBytes)
		}
		peak = max(peak, s.ChargedBytes)
		s.PeakBytes, s.OOMKills = peak, uint64(len(killed))
		out = append(out, s)
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
	}
}

// Peak is the largest charged and RSS figures sampled and the last
// oom_kill count. (PeakBytes is left out: v1 keeps it across the
// agent's restarts in one group.)
func Peak(samples []Sample) (charged, rss int64, oomKills uint64) {
	for _, s := range samples {
		charged = max(charged, s.ChargedBytes)
		rss = max(rss, s.RSSBytes)
		oomKills = max(oomKills, s.OOMKills)
	}
	return charged, rss, oomKills
}
