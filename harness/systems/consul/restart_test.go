package consul

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// fakeAgent dies when told to, OOM-killed or not, and restarts at once:
// each start is a process of its own.
type fakeAgent struct {
	mu   sync.Mutex
	proc *fakeProc
}

// fakeProc is one process of a fakeAgent.
type fakeProc struct {
	lab.Proc
	done chan struct{}
	exit lab.ProcExit
}

func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) Exit() lab.ProcExit    { <-p.done; return p.exit }

func newFakeAgent() *fakeAgent { return &fakeAgent{proc: &fakeProc{done: make(chan struct{})}} }

func (*fakeAgent) Name() string { return "agent1" }
func (f *fakeAgent) Proc() lab.Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.proc
}
func (f *fakeAgent) Running() bool {
	select {
	case <-f.Proc().Done():
		return false
	default:
		return true
	}
}
func (f *fakeAgent) Start(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc = &fakeProc{done: make(chan struct{})}
	return nil
}
func (f *fakeAgent) die(oom bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc.exit = lab.ProcExit{Code: 137, OOM: oom, How: "exit code 137"}
	close(f.proc.done)
}

// Each death is recorded (an OOM kill as the kernel's counters say), the agent is
// restarted after a doubling, capped back-off, and the figures add up.
func TestSupervisorBackoff(t *testing.T) {
	f := newFakeAgent()
	var mu sync.Mutex
	kinds := map[string]int{}
	env := &lab.Env{T0: time.Now(), OnEvent: func(e lab.Event) { mu.Lock(); kinds[e.Kind]++; mu.Unlock() }}
	b := instances.Backoff{Initial: lab.Duration(100 * time.Millisecond), Max: lab.Duration(300 * time.Millisecond)}
	s := superviseAgents(env, b, []*pod{{m: f}})
	defer s.stop()
	for i := range 4 {
		f.die(i%2 == 0)
		require.Eventually(t, func() bool { return s.lives()[0].Restarts == i+1 && f.Running() }, 5*time.Second, 10*time.Millisecond)
	}
	l := s.lives()[0]
	require.Equal(t, 2, l.OOMKills)
	require.Equal(t, 4, l.Exits)
	require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}, l.Delays)
	require.GreaterOrEqual(t, l.Down, 900*time.Millisecond)
	mu.Lock()
	require.Equal(t, map[string]int{"oom-kill": 2, "agent-exit": 2, "agent-restart": 4}, kinds)
	mu.Unlock()
	sum := s.samples(1)[1]
	require.Equal(t, "agents", sum.Member)
	require.Equal(t, 2.0, sum.Values[SeriesOOMKills])
	require.Equal(t, 4.0, sum.Values[SeriesRestarts])
}

// The topology refuses a restart policy without agents or with a busy
// loop, and is off by default.
func TestTopologyAgentRestart(t *testing.T) {
	topo := (&System{}).NewTopology().(*Topology)
	require.False(t, topo.AgentRestart.On())
	require.Empty(t, topo.Check())
	topo.AgentRestart = instances.Backoff{Initial: lab.Duration(10 * time.Millisecond), Max: lab.Duration(time.Second)}
	ps := topo.Check()
	require.Len(t, ps, 1)
	require.Equal(t, "agent_restart.initial", ps[0].Field)
	topo.AgentRestart.Initial = lab.Duration(time.Second)
	topo.Agents = 0
	ps = topo.Check()
	require.Len(t, ps, 1)
	require.Equal(t, "agent_restart", ps[0].Field)
}
