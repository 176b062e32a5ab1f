package lab

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	roles  = []string{RoleLeader, RoleFollower, RoleObserver}
	groups = []string{"clients"}
)

func TestParseSelector(t *testing.T) {
	for in, want := range map[string]Selector{
		"leader":              {Raw: "leader", Group: "leader", Count: 1},
		"follower":            {Raw: "follower", Group: "follower", Count: 1},
		"followers":           {Raw: "followers", Group: "follower", All: true},
		"followers:2":         {Raw: "followers:2", Group: "follower", Count: 2},
		"members:50%":         {Raw: "members:50%", Group: "member", Percent: 50},
		"any":                 {Raw: "any", Group: "any", Count: 1},
		"member:zk2":          {Raw: "member:zk2", Group: "member", Member: "zk2", Count: 1},
		"clients":             {Raw: "clients", Group: "clients", All: true},
		"clients:3":           {Raw: "clients:3", Group: "clients", Count: 3},
		"clients:all":         {Raw: "clients:all", Group: "clients", All: true},
		"server":              {Raw: "server", Group: "server", Count: 1},
		"observers:1":         {Raw: "observers:1", Group: "observer", Count: 1},
		"leaders:all":         {Raw: "leaders:all", Group: "leader", All: true},
		"follower:all":        {Raw: "follower:all", Group: "follower", All: true},
		"follower:untouched":  {Raw: "follower:untouched", Group: "follower", Count: 1, Untouched: true},
		"followers:untouched": {Raw: "followers:untouched", Group: "follower", All: true, Untouched: true},
	} {
		got, err := ParseSelector(in, roles, groups)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for in, msg := range map[string]string{
		"president":         `unknown target "president"`,
		"followers:0":       "want a count of at least 1",
		"followers:150%":    "want a share above 0% and at most 100%",
		"followers:some":    "want a count of at least 1",
		"member:":           "member: wants a name",
		"agents":            `unknown target "agents"`, // not a role of this system
		"fleet":             `unknown target "fleet"`,  // not a group of this workload
		"clients:untouched": "only a role takes untouched",
	} {
		_, err := ParseSelector(in, roles, groups)
		require.ErrorContains(t, err, msg, in)
	}
}

// fakeCluster is members with fixed roles, for the selector's picks.
type fakeCluster struct {
	Cluster
	ms []Member
}

func (c fakeCluster) Members() []Member { return c.ms }
func (c fakeCluster) Leader(context.Context) (Member, error) {
	return c.ms[0], nil
}

type fakeMember struct {
	Target
	name, role string
}

func (m fakeMember) Name() string                         { return m.name }
func (m fakeMember) Role(context.Context) (string, error) { return m.role, nil }
func (m fakeMember) Running() bool                        { return true }
func (m fakeMember) Paused() bool                         { return false }

func TestSelectorResolve(t *testing.T) {
	c := fakeCluster{ms: []Member{fakeMember{name: "zk1", role: "leader"}, fakeMember{name: "zk2", role: "follower"},
		fakeMember{name: "zk3", role: "follower"}, fakeMember{name: "zk4", role: "observer"}}}
	pick := func(s string, seed uint64) []string {
		sel, err := ParseSelector(s, roles, groups)
		require.NoError(t, err)
		ts, err := sel.Resolve(context.Background(), c, nil, groups, rand.New(rand.NewPCG(seed, 1)))
		require.NoError(t, err, s)
		var names []string
		for _, x := range ts {
			names = append(names, x.Name())
		}
		return names
	}
	require.Equal(t, []string{"zk1"}, pick("leader", 1))
	require.Equal(t, []string{"zk2", "zk3"}, pick("followers", 1))
	require.Len(t, pick("follower", 1), 1)
	require.Equal(t, []string{"zk4"}, pick("observer", 1))
	require.Len(t, pick("members:50%", 1), 2)
	require.Len(t, pick("servers", 1), 4)
	require.Equal(t, []string{"zk3"}, pick("member:zk3", 1))
	require.Equal(t, []string{"zk2"}, pick("member:2", 1))
	require.Equal(t, pick("follower", 7), pick("follower", 7), "the same seed picks the same member")

	// A rolling procedure: each step takes a follower no earlier step took.
	sel, err := ParseSelector("follower:untouched", roles, groups)
	require.NoError(t, err)
	sel.Touched = []string{"zk2"}
	for seed := range uint64(8) {
		ts, err := sel.Resolve(context.Background(), c, nil, groups, rand.New(rand.NewPCG(seed, 1)))
		require.NoError(t, err)
		require.Equal(t, "zk3", ts[0].Name(), "seed %d", seed)
	}
	sel.Touched = []string{"zk2", "zk3"}
	_, err = sel.Resolve(context.Background(), c, nil, groups, rand.New(rand.NewPCG(1, 1)))
	require.ErrorContains(t, err, "every follower now was targeted by an earlier step")
}

func pts(vs ...float64) []Point {
	out := make([]Point, len(vs))
	for i, v := range vs {
		out[i] = Pt(float64(i), v)
	}
	return out
}

func TestReducers(t *testing.T) {
	series := []*Series{
		{Name: "q", Source: "a", Points: pts(1, 5, 2, math.NaN(), 9, 1, 0)},
		{Name: "q", Source: "b", Points: pts(0, 0, 7, 7, 0, 0, 0)},
		{Name: "other", Source: "a", Points: pts(100)},
	}
	tl := Timeline{WarmEnd: 1, Faults: []FaultWindow{{Start: 2, End: 4}}, End: 6}
	for expr, want := range map[string]float64{
		"max(q)":                           9,
		"max(q)@during-faults":             9,
		"max(q)@after-faults":              9,
		"min(q)@from-fault":                0,
		"last(q)":                          0,
		"time_above(q, 4)":                 2, // b: 7 at 2 and 3, one second each
		"time_below(q, 1)@after-warmup":    3, // b: 0 at 1, 4 and 5, each until the next point
		"recover_below(q, 3)@after-faults": 0, // a: 9 at t=4 is the last bad point: 4-4
		"recover_below(q, 0.5)@all":        5, // a: 1 at t=5 is its last bad point
	} {
		r, isExpr, err := ParseReducer(expr)
		require.True(t, isExpr, expr)
		require.NoError(t, err, expr)
		got, ok := r.Apply(series, tl)
		require.True(t, ok, expr)
		require.InDelta(t, want, got, 1e-9, expr)
		again, _, _ := ParseReducer(r.Name())
		require.Equal(t, r, again, "the canonical name reads back: %s", r.Name())
	}
	// A source still above the bound at its last point never recovers.
	r, _, _ := ParseReducer("recover_below(q, 0.5)@from-fault")
	got, ok := r.Apply([]*Series{{Name: "q", Points: pts(0, 0, 0, 1)}}, tl)
	require.True(t, ok)
	require.True(t, math.IsInf(got, 1))
	// No fault ran: a fault window does not exist.
	_, ok = r.Apply(series, Timeline{End: 6})
	require.False(t, ok)
	// rate is a cumulative series' growth per second over the window,
	// the fastest source's.
	count := []*Series{
		{Name: "n", Source: "a", Points: pts(0, 10, 20, 60, 100, 110, 120)},
		{Name: "n", Source: "b", Points: pts(0, 1, 2, 3, math.NaN(), 5, 6)},
	}
	for expr, want := range map[string]float64{
		"rate(n)@before-fault":  10, // a: 10 to 20 over t=1..2
		"rate(n)@during-faults": 40, // a: 20 to 100 over t=2..4
		"rate(n)":               20, // a: 0 to 120 over 6 s
		// a and b together: 80 + 1 over t=2..4
		"total_rate(n)@during-faults": 81 / 2.0,
		// a and b together: 11 over t=1..2 before; 80 + 1 (b's last
		// point is a gap) over t=2..4 during
		"jump(n)@during-faults": 40.5 / 11,
	} {
		r, _, err := ParseReducer(expr)
		require.NoError(t, err, expr)
		got, ok := r.Apply(count, tl)
		require.True(t, ok, expr)
		require.InDelta(t, want, got, 1e-9, expr)
	}
	// A counter that falls started again from 0 (a restarted server's):
	// the value after the fall is new growth, not a loss.
	reset := []*Series{{Name: "n", Source: "a", Points: pts(0, 10, 20, 5, 25, 35, 45)}}
	for expr, want := range map[string]float64{
		"rate(n)@during-faults": (5 + 20) / 2.0, // 20, then 5 after the restart, then 25
		"jump(n)@during-faults": 12.5 / 10,
		"rate(n)":               (20 + 5 + 40) / 6.0,
	} {
		r, _, err := ParseReducer(expr)
		require.NoError(t, err, expr)
		got, ok := r.Apply(reset, tl)
		require.True(t, ok, expr)
		require.InDelta(t, want, got, 1e-9, expr)
	}
	// mean pools every point of every source.
	mean, _, _ := ParseReducer("mean(q)")
	got, _ = mean.Apply(series, tl)
	require.InDelta(t, (1+5+2+9+1+0+0+0+7+7+0+0+0)/13.0, got, 1e-9)
}

func TestParseReducerErrors(t *testing.T) {
	for expr, msg := range map[string]string{
		"max(q)@soon":         `window want one of`,
		"median(q)":           `reduce want one of`,
		"time_above(q)":       "takes a bound exactly when",
		"max(q, 3)":           "takes a bound exactly when",
		"time_above(q, lots)": `bound "lots" is not a number`,
		"max(q)x":             "want @WINDOW after the parenthesis",
	} {
		_, isExpr, err := ParseReducer(expr)
		require.True(t, isExpr, expr)
		require.ErrorContains(t, err, msg, expr)
	}
	_, isExpr, _ := ParseReducer("clients.oom_kills")
	require.False(t, isExpr)
}

// An agent runs as `agent AGENT --config JSON` on every placement; a
// config that cannot be encoded is an error naming the program.
func TestAgentArgs(t *testing.T) {
	args, err := Program{Name: "client-01-0", Agent: "zk-tree-mirror", Config: map[string]int{"x": 1}}.AgentArgs()
	require.NoError(t, err)
	require.Equal(t, []string{"agent", "zk-tree-mirror", "--config", `{"x":1}`}, args)
	_, err = Program{Name: "client-02-0", Config: func() {}}.AgentArgs()
	require.ErrorContains(t, err, "encode config of client-02-0")
}
