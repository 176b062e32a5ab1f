package consul

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// The supervisor's series: per pod (an agent's source is "<agent>-pod")
// and summed over every agent (source "agents").
const (
	SeriesOOMKills = "agent.oom_kills"
	SeriesRestarts = "agent.restarts"
	SeriesDown     = "agent.down_s"
	// joinTimeout bounds one restart's wait until the agent has joined.
	joinTimeout = 30 * time.Second
)

// supervisor restarts the client agents that die, as a kubelet restarts
// a pod's container: after a back-off that doubles, capped.
type supervisor struct {
	env     *lab.Env
	backoff instances.Backoff
	pods    []*pod
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// agent is what the supervisor needs of a client agent.
type agent interface {
	Name() string
	Running() bool
	// Proc is its latest process: Done when it ended, Exit how (an OOM
	// kill as the kernel's or the engine's counters say).
	Proc() lab.Proc
	// Start starts it again and returns once it has joined.
	Start(ctx context.Context) error
}

// pod is one agent under the supervisor, with its figures.
type pod struct {
	m agent

	mu        sync.Mutex
	oomKills  int
	exits     int
	restarts  int
	delays    []time.Duration
	down      time.Duration
	downSince time.Time // zero while up
}

// proc is the agent's latest process.
func (p *pod) proc() lab.Proc { return p.m.Proc() }

// waitDead waits until p's agent has died (true) or ctx ended (false).
func (p *pod) waitDead(ctx context.Context) bool {
	pr := p.proc()
	if pr == nil {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-pr.Done():
		return ctx.Err() == nil
	}
}

// superviseAgents starts a supervisor of every pod.
func superviseAgents(env *lab.Env, b instances.Backoff, pods []*pod) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{env: env, backoff: b, cancel: cancel, pods: pods}
	for _, p := range pods {
		s.wg.Go(func() { s.watch(ctx, p) })
	}
	return s
}

// stop ends the supervision (before the cluster closes its nodes).
func (s *supervisor) stop() {
	s.cancel()
	s.wg.Wait()
}

// watch restarts p's agent each time it dies, until ctx ends.
func (s *supervisor) watch(ctx context.Context, p *pod) {
	loop, started := 0, time.Now()
	for {
		if !p.waitDead(ctx) {
			return
		}
		if time.Since(started) >= s.backoff.ResetAfter() {
			loop = 0
		}
		s.died(p)
		for !s.restart(ctx, p, s.backoff.Delay(loop)) {
			loop++
			if ctx.Err() != nil {
				return
			}
		}
		loop++
		started = time.Now()
	}
}

// restart waits delay, starts p's agent again and waits until it has
// joined; false when it died again (or ctx ended).
func (s *supervisor) restart(ctx context.Context, p *pod, delay time.Duration) bool {
	if !lab.Sleep(ctx, delay) {
		return false
	}
	if p.m.Running() {
		// Restarted by someone else (a fault's restart).
		s.up(p, delay, "restarted by a fault")
		return true
	}
	before := p.proc()
	jctx, cancel := context.WithTimeout(ctx, joinTimeout)
	err := p.m.Start(jctx)
	cancel()
	if ctx.Err() != nil {
		return false
	}
	if p.started(before, err) {
		p.mu.Lock()
		p.restarts++
		p.delays = append(p.delays, delay)
		p.mu.Unlock()
	}
	switch {
	case err == nil:
		s.up(p, delay, "serving again")
		return true
	case p.m.Running():
		// Started but not joined in time: up as far as a kubelet knows.
		s.up(p, delay, "running, not joined: "+err.Error())
		return true
	}
	s.env.Record("note", p.m.Name(), "restart failed: "+err.Error())
	s.died(p)
	return false
}

// started says whether a restart started the agent (it may have died
// again since, or not joined in time): its process is not the one before.
func (p *pod) started(before lab.Proc, _ error) bool { return p.proc() != before }

// died records the death of p's agent: an OOM kill when the kernel's
// counters (its cgroup's, or the engine's state) say so, else an exit.
func (s *supervisor) died(p *pod) {
	e := p.proc().Exit()
	how := e.How
	if how == "" {
		how = "exited"
	}
	p.mu.Lock()
	if e.OOM {
		p.oomKills++
	}
	p.exits++
	if p.downSince.IsZero() {
		p.downSince = time.Now()
	}
	p.mu.Unlock()
	kind := "agent-exit"
	if e.OOM {
		kind = "oom-kill"
	}
	s.env.Record(kind, p.m.Name(), how)
}

// up records p's agent back after delay.
func (s *supervisor) up(p *pod, delay time.Duration, how string) {
	p.mu.Lock()
	down := time.Since(p.downSince)
	p.down += down
	p.downSince = time.Time{}
	n := p.restarts
	p.mu.Unlock()
	s.env.Record("agent-restart", p.m.Name(), fmt.Sprintf("restart %d after a %s back-off, down %s: %s", n, delay, down.Round(time.Millisecond), how))
}

// AgentLife is what happened to one supervised agent.
type AgentLife struct {
	Agent    string
	OOMKills int
	Exits    int
	Restarts int
	// Delays are the back-offs before each restart, in order.
	Delays []time.Duration
	// Down is the time it was not serving (dead or not yet joined),
	// counting a death still going on.
	Down time.Duration
}

// lives are every pod's figures now.
func (s *supervisor) lives() []AgentLife {
	var out []AgentLife
	for _, p := range s.pods {
		p.mu.Lock()
		l := AgentLife{Agent: p.m.Name(), OOMKills: p.oomKills, Exits: p.exits, Restarts: p.restarts,
			Delays: append([]time.Duration(nil), p.delays...), Down: p.down}
		if !p.downSince.IsZero() {
			l.Down += time.Since(p.downSince)
		}
		p.mu.Unlock()
		out = append(out, l)
	}
	return out
}

// samples are the supervisor's figures as member samples: one per pod
// and their sum.
func (s *supervisor) samples(t float64) []lab.MemberSample {
	var out []lab.MemberSample
	sum := map[string]float64{}
	for _, l := range s.lives() {
		v := map[string]float64{SeriesOOMKills: float64(l.OOMKills), SeriesRestarts: float64(l.Restarts), SeriesDown: l.Down.Seconds()}
		for k, x := range v {
			sum[k] += x
		}
		out = append(out, lab.MemberSample{T: t, Member: l.Agent + "-pod", OK: true, Values: v})
	}
	return append(out, lab.MemberSample{T: t, Member: "agents", OK: true, Values: sum})
}

// AgentLives are the supervised agents' figures so far (nil when c is not
// a Consul cluster or agent_restart is off).
func AgentLives(c lab.Cluster) []AgentLife {
	cc, ok := c.(*cluster)
	if !ok || cc.sup == nil {
		return nil
	}
	return cc.sup.lives()
}
