package dblb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/dockerconsul"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/placement/container"
	"github.com/chaoslab/chaoslab/harness/placement/local"
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

// agentMeters are the meters of c's client agents on the variant's site
// (none where the site has no way to read them).
func agentMeters(ctx context.Context, env *lab.Env, c lab.Cluster) []agentMeter {
	if _, ok := env.Site.(*container.Site); ok {
		var out []agentMeter
		for _, n := range consul.AgentContainers(c) {
			out = append(out, engineMeter{n: n})
		}
		return out
	}
	site, ok := env.Site.(*local.Site)
	if !ok {
		return nil
	}
	var out []agentMeter
	for _, m := range c.Members() {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		role, err := m.Role(rctx)
		cancel()
		if err != nil || role != lab.RoleAgent {
			continue
		}
		if g := site.Limits().Group(m.Name()); g != nil {
			out = append(out, cgroupMeter{agent: m.Name(), g: g})
		}
	}
	return out
}

// engineMeter reads an agent container's memory as the engine reports
// it (its cgroup's usage, page cache included: what the limit counts).
type engineMeter struct{ n *dockerconsul.Node }

func (e engineMeter) name() string { return e.n.Name() }
func (e engineMeter) limit() int64 { return e.n.MemoryLimit() }
func (e engineMeter) read(ctx context.Context) (agentMem, error) {
	if !e.n.Running() {
		return agentMem{}, errors.New("read agent memory: not running")
	}
	rctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
	defer cancel()
	u, err := e.n.MemoryUsage(rctx)
	if err != nil {
		return agentMem{}, fmt.Errorf("read agent memory: %w", err)
	}
	return agentMem{charged: int64(u), ok: true}, nil
}

// cgroupMeter reads a local agent's memory cgroup and its processes.
type cgroupMeter struct {
	agent string
	g     *limits.Group
}

func (c cgroupMeter) name() string { return c.agent }
func (c cgroupMeter) limit() int64 { return c.g.Limits().MemoryBytes }
func (c cgroupMeter) read(context.Context) (agentMem, error) {
	st, err := c.g.Stats()
	if err != nil {
		return agentMem{}, fmt.Errorf("read agent memory: %w", err)
	}
	m := agentMem{charged: st.MemoryBytes, ok: true}
	pids, err := c.g.Procs()
	if err != nil {
		return m, nil
	}
	for _, p := range pids {
		if ps, err := limits.ProcStats(p); err == nil {
			m.rss += ps.RSSBytes
		}
	}
	return m, nil
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
