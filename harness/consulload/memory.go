package consulload

import (
	"context"
	"time"

	"github.com/chaoslab/chaoslab/harness/limits"
)

// Sample is the agent's memory at one moment.
type Sample struct {
	At time.Duration // since the recorder started
	// ChargedBytes and PeakBytes are what its cgroup charges now and the
	// peak so far (v1 memory.usage_in_bytes and max_usage_in_bytes, v2
	// memory.current and memory.peak).
	ChargedBytes int64
	PeakBytes    int64
	// RSSBytes is the agent's resident set from /proc (0 while it is
	// dead); it includes the binary's file pages, which the cgroup may
	// not be charged for.
	RSSBytes int64
	OOMKills uint64 // the cgroup's oom_kill counter
}

// Record samples group g, and the process pid() names, every period until
// ctx ends, and returns the samples. pid may return 0 (no process now).
func Record(ctx context.Context, g *limits.Group, pid func() int, every time.Duration) []Sample {
	t := time.NewTicker(every)
	defer t.Stop()
	began := time.Now()
	var out []Sample
	for {
		s := Sample{At: time.Since(began)}
		if st, err := g.Stats(); err == nil {
			s.ChargedBytes, s.PeakBytes, s.OOMKills = st.MemoryBytes, st.MemoryMaxBytes, st.OOMKills
		}
		if p := pid(); p > 0 {
			if ps, err := limits.ProcStats(p); err == nil {
				s.RSSBytes = ps.RSSBytes
			}
		}
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
