package dblb

import (
	"context"
	"errors"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/consul"
)

// The agents' memory series: what each pod's agent is charged against its
// limit, and its resident set.
const (
	SeriesAgentMemory = "agent.memory_mb"
	SeriesAgentRSS    = "agent.os_rss_mb"
)

// agentMem is one reading of one agent's memory (bytes).
type agentMem struct {
	charged, rss int64
	ok           bool
}

// agentMeter reads one client agent's memory and its limit.
type agentMeter interface {
	name() string
	read(ctx context.Context) (agentMem, error)
	// limit is the agent's enforced memory limit (0 when none).
	limit() int64
}

// agentMeters are the meters of c's client agents, on any placement:
// each agent's process as its placement counts it.
func agentMeters(_ context.Context, _ *lab.Env, c lab.Cluster) []agentMeter {
	var out []agentMeter
	for _, m := range consul.Agents(c) {
		if p, ok := m.(procMember); ok {
			out = append(out, procMeter{p})
		}
	}
	return out
}

// procMember is an agent whose process its placement counts.
type procMember interface {
	Name() string
	Running() bool
	Proc() lab.Proc
	MemoryLimit() int64
}

// procMeter reads an agent's memory as the kernel charges it to its
// cgroup (or its container's: page cache included, what the limit
// counts) and its resident set.
type procMeter struct{ m procMember }

func (p procMeter) name() string { return p.m.Name() }
func (p procMeter) limit() int64 { return max(p.m.MemoryLimit(), 0) }
func (p procMeter) read(context.Context) (agentMem, error) {
	pr := p.m.Proc()
	if pr == nil || !p.m.Running() {
		return agentMem{}, errors.New("read agent memory: not running")
	}
	st := pr.Stats()
	return agentMem{charged: st.MemoryChargedBytes, rss: st.RSSBytes, ok: true}, nil
}

// sampleAgents reads every agent's memory.
func (w *workload) sampleAgents(ctx context.Context) []agentMem {
	out := make([]agentMem, len(w.agents))
	for i, a := range w.agents {
		if m, err := a.read(ctx); err == nil {
			out[i] = m
		}
	}
	return out
}

// collectAgents adds each agent's charged memory and RSS, the limit drawn
// across the charged memory's chart (the figure the limit is enforced on).
func (w *workload) collectAgents(r *lab.Result) {
	w.mu.Lock()
	samples := append([]dbSample(nil), w.samples...)
	w.mu.Unlock()
	peak := 0.0
	for _, d := range samples {
		for i, m := range d.agents {
			if i >= len(w.agents) || !m.ok {
				continue
			}
			name := w.agents[i].name()
			mb := float64(m.charged) / (1 << 20)
			peak = max(peak, mb)
			r.Add(SeriesAgentMemory, name, "MiB", d.t, mb)
			if m.rss > 0 {
				r.Add(SeriesAgentRSS, name, "MiB", d.t, float64(m.rss)/(1<<20))
			}
		}
	}
	if len(w.agents) == 0 {
		return
	}
	r.SetMetric(MetricAgentMemoryMax, peak)
	if lim := w.agents[0].limit(); lim > 0 {
		mb := float64(lim) / (1 << 20)
		r.SetLimit(SeriesAgentMemory, mb, "each agent's memory limit "+lab.FormatMB(mb))
	}
}
