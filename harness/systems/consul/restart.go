package consul

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/consullocal"
	"github.com/chaoslab/chaoslab/harness/dockerconsul"
	"github.com/chaoslab/chaoslab/harness/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/limits"
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

// supervisedNode is what the supervisor needs of an agent on either
// placement.
type supervisedNode interface {
	Name() string
	Running() bool
	Restart(ctx context.Context) error
}

// pod is one agent under the supervisor, with its figures.
type pod struct {
	node supervisedNode
	// done, when set, is closed once the agent's latest process has
	// ended (local); else its death is seen by polling Running (docker).
	done func() <-chan struct{}
	// group is the agent's cgroup (local): its oom_kill counter tells an
	// OOM kill; engineOOM is the engine's state (docker).
	group     *limits.Group
	engineOOM func() bool
	// exitHow says how the agent's process ended ("" when unknown).
	exitHow func() string

	mu        sync.Mutex
	oomSeen   uint64 // the cgroup's oom_kill when last read
	oomKills  int
	exits     int
	restarts  int
	delays    []time.Duration
	down      time.Duration
	downSince time.Time // zero while up
}

// localPod is a consullocal agent in its memory cgroup (group may be nil).
func localPod(n *consullocal.Node, group *limits.Group) *pod {
	return &pod{node: n, done: n.Done, group: group, exitHow: func() string {
		if st := n.ExitState(); st != nil {
			return st.String()
		}
		return ""
	}}
}

// dockerPod is a dockerconsul agent: the engine says whether the kernel
// OOM-killed its PID 1.
func dockerPod(n *dockerconsul.Node) *pod {
	return &pod{node: n, engineOOM: n.OOMKilled, exitHow: func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if st, err := n.State(ctx); err == nil {
			return fmt.Sprintf("exit code %d", st.ExitCode)
		}
		return ""
	}}
}

// pollDead is how often a docker agent's state is read.
const pollDead = 250 * time.Millisecond

// waitDead waits until p's agent has died (true) or ctx ended (false).
func (p *pod) waitDead(ctx context.Context) bool {
	if p.done != nil {
		select {
		case <-ctx.Done():
			return false
		case <-p.done():
			return ctx.Err() == nil
		}
	}
	for p.node.Running() {
		if !lab.Sleep(ctx, pollDead) {
			return false
		}
	}
	return ctx.Err() == nil
}

// superviseAgents starts a supervisor of every pod.
func superviseAgents(env *lab.Env, b instances.Backoff, pods []*pod) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{env: env, backoff: b, cancel: cancel, pods: pods}
	for _, p := range pods {
		p.oomSeen = p.oomCount()
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
	if p.node.Running() {
		// Restarted by someone else (a fault's restart).
		s.up(p, delay, "restarted by a fault")
		return true
	}
	before := p.doneNow()
	jctx, cancel := context.WithTimeout(ctx, joinTimeout)
	err := p.node.Restart(jctx)
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
	case p.node.Running():
		// Started but not joined in time: up as far as a kubelet knows.
		s.up(p, delay, "running, not joined: "+err.Error())
		return true
	}
	s.env.Record("note", p.node.Name(), "restart failed: "+err.Error())
	s.died(p)
	return false
}

// started says whether a restart that returned err started the agent
// (it may have died again since, or not joined in time); before is the
// local process's done channel before the restart.
func (p *pod) started(before <-chan struct{}, err error) bool {
	if p.done != nil {
		return p.done() != before
	}
	return err == nil || p.node.Running() || (p.engineOOM != nil && p.engineOOM())
}

// doneNow is the local process's done channel (nil on docker).
func (p *pod) doneNow() <-chan struct{} {
	if p.done == nil {
		return nil
	}
	return p.done()
}

// died records the death of p's agent: an OOM kill when its cgroup's
// counter went up, else an exit.
func (s *supervisor) died(p *pod) {
	oom := p.oomCount()
	how := "exited"
	if h := p.exitHow(); h != "" {
		how = h
	}
	p.mu.Lock()
	killed := oom > p.oomSeen
	switch {
	case killed:
		p.oomKills += int(oom - p.oomSeen)
		how = fmt.Sprintf("OOM-killed by the kernel (cgroup oom_kill %d -> %d), %s", p.oomSeen, oom, how)
	case p.engineOOM != nil && p.engineOOM():
		killed = true
		p.oomKills++
		how = "OOM-killed by the kernel (the engine's state: OOMKilled), " + how
	}
	p.oomSeen = oom
	p.exits++
	if p.downSince.IsZero() {
		p.downSince = time.Now()
	}
	p.mu.Unlock()
	kind := "agent-exit"
	if killed {
		kind = "oom-kill"
	}
	s.env.Record(kind, p.node.Name(), how)
}

// up records p's agent back after delay.
func (s *supervisor) up(p *pod, delay time.Duration, how string) {
	p.mu.Lock()
	down := time.Since(p.downSince)
	p.down += down
	p.downSince = time.Time{}
	n := p.restarts
	p.mu.Unlock()
	s.env.Record("agent-restart", p.node.Name(), fmt.Sprintf("restart %d after a %s back-off, down %s: %s", n, delay, down.Round(time.Millisecond), how))
}

// oomCount is the kernel's oom_kill counter of p's cgroup (0 without one).
func (p *pod) oomCount() uint64 {
	if p.group == nil {
		return 0
	}
	st, err := p.group.Stats()
	if err != nil {
		return 0
	}
	return st.OOMKills
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
		l := AgentLife{Agent: p.node.Name(), OOMKills: p.oomKills, Exits: p.exits, Restarts: p.restarts,
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
