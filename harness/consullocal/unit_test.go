package consullocal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/faults"
)

var _ faults.Target = (*Node)(nil)

func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

func TestPlanOneServerTwoAgents(t *testing.T) {
	o := Options{Agents: 2, Binary: "/bin/consul"}.withDefaults()
	specs, err := plan(o, Address, "/d", seq(10000, 5+2*3))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 3 {
		t.Fatalf("%d specs", len(specs))
	}
	want := [][]string{
		{"agent", "-server", "-bootstrap-expect=1", "-node=server1", "-data-dir=/d/server1",
			"-bind=127.0.0.1", "-client=127.0.0.1", "-serf-lan-port=10001", "-http-port=10003", "-dns-port=10004",
			"-grpc-port=-1", "-server-port=10000", "-serf-wan-port=10002", "-grpc-tls-port=-1",
			"-hcl=performance { raft_multiplier = 1 }"},
		{"agent", "-node=agent1", "-data-dir=/d/agent1",
			"-bind=127.0.0.1", "-client=127.0.0.1", "-serf-lan-port=10005", "-http-port=10006", "-dns-port=10007",
			"-grpc-port=-1", "-retry-join=127.0.0.1:10001", "-retry-interval=200ms"},
		{"agent", "-node=agent2", "-data-dir=/d/agent2",
			"-bind=127.0.0.1", "-client=127.0.0.1", "-serf-lan-port=10008", "-http-port=10009", "-dns-port=10010",
			"-grpc-port=-1", "-retry-join=127.0.0.1:10001", "-retry-interval=200ms"},
	}
	for i, s := range specs {
		if got := s.args(); !slices.Equal(got, want[i]) {
			t.Errorf("%s:\n got %q\nwant %q", s.Name, got, want[i])
		}
	}
}

func TestPlanThreeServers(t *testing.T) {
	o := Options{Servers: 3, Agents: 1, Binary: "/bin/consul", RaftMultiplier: 5, ExtraArgs: []string{"-log-level=warn"}}.withDefaults()
	specs, err := plan(o, Address, "/d", seq(20000, 3*5+3))
	if err != nil {
		t.Fatal(err)
	}
	serfs := []string{"127.0.0.1:20001", "127.0.0.1:20006", "127.0.0.1:20011"}
	for i, s := range specs {
		a := s.args()
		var joins []string
		for _, x := range a {
			if j, ok := strings.CutPrefix(x, "-retry-join="); ok {
				joins = append(joins, j)
			}
		}
		if a[len(a)-1] != "-log-level=warn" {
			t.Errorf("%s: ExtraArgs not last: %q", s.Name, a)
		}
		if s.Server {
			// Every server joins the other two, not itself.
			want := slices.Delete(slices.Clone(serfs), i, i+1)
			if !slices.Equal(joins, want) {
				t.Errorf("%s joins %q, want %q", s.Name, joins, want)
			}
			for _, f := range []string{"-bootstrap-expect=3", "-hcl=performance { raft_multiplier = 5 }", "-grpc-tls-port=-1"} {
				if !slices.Contains(a, f) {
					t.Errorf("%s: no %s in %q", s.Name, f, a)
				}
			}
		} else {
			if !slices.Equal(joins, serfs) {
				t.Errorf("%s joins %q, want %q", s.Name, joins, serfs)
			}
			for _, x := range a {
				if strings.HasPrefix(x, "-server") || strings.HasPrefix(x, "-bootstrap") || strings.Contains(x, "raft") {
					t.Errorf("%s: server flag %s", s.Name, x)
				}
			}
		}
	}
	// Every port is used once.
	seen := map[string]string{}
	for _, s := range specs {
		for _, x := range s.args() {
			if k, v, ok := strings.Cut(x, "-port="); ok && v != "-1" {
				if prev, dup := seen[v]; dup {
					t.Errorf("port %s twice: %s and %s%s", v, prev, s.Name, k)
				}
				seen[v] = s.Name + k
			}
		}
	}
	if len(seen) != 3*5+3 {
		t.Errorf("%d distinct ports, want %d", len(seen), 3*5+3)
	}
	if _, err := plan(o, Address, "/d", seq(1, 4)); err == nil {
		t.Error("plan with too few ports: no error")
	}
}

func TestOptionsCheck(t *testing.T) {
	ok := Options{Binary: "/bin/consul"}
	if err := ok.withDefaults().check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if o := ok.withDefaults(); o.Servers != 1 || o.RaftMultiplier != 1 || o.Agents != 0 {
		t.Fatalf("defaults: %+v", o)
	}
	for name, o := range map[string]Options{
		"no binary":     {},
		"6 servers":     {Binary: "b", Servers: 6},
		"-1 servers":    {Binary: "b", Servers: -1},
		"21 agents":     {Binary: "b", Agents: 21},
		"-1 agents":     {Binary: "b", Agents: -1},
		"raft 11":       {Binary: "b", RaftMultiplier: 11},
		"dev extra arg": {Binary: "b", ExtraArgs: []string{"-dev"}},
	} {
		if err := o.withDefaults().check(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestJoined(t *testing.T) {
	srv := func(name string, st int) *api.AgentMember {
		return &api.AgentMember{Name: name, Status: st, Tags: map[string]string{"role": "consul"}}
	}
	cli := func(name string, st int) *api.AgentMember {
		return &api.AgentMember{Name: name, Status: st, Tags: map[string]string{"role": "node"}}
	}
	for _, tc := range []struct {
		name  string
		node  string
		alone bool
		ms    []*api.AgentMember
		ok    bool
	}{
		{"agent with a server", "agent1", false, []*api.AgentMember{srv("server1", MemberAlive), cli("agent1", MemberAlive)}, true},
		{"agent, server failed", "agent1", false, []*api.AgentMember{srv("server1", MemberFailed), cli("agent1", MemberAlive)}, false},
		{"agent not yet alive", "agent1", false, []*api.AgentMember{srv("server1", MemberAlive)}, false},
		{"only server", "server1", true, []*api.AgentMember{srv("server1", MemberAlive)}, true},
		{"one of three alone", "server1", false, []*api.AgentMember{srv("server1", MemberAlive), srv("server2", MemberLeft)}, false},
		{"one of three", "server1", false, []*api.AgentMember{srv("server1", MemberAlive), srv("server2", MemberAlive)}, true},
	} {
		if err := joined(tc.node, tc.alone, tc.ms); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestJudge(t *testing.T) {
	c := &Cluster{}
	s1 := &Node{c: c, name: "server1", server: true, addr: Address, ports: ports{Server: 1, SerfLAN: 2, HTTP: 3, DNS: 4, SerfWAN: 5}}
	a1 := &Node{c: c, name: "agent1", addr: Address, ports: ports{SerfLAN: 6, HTTP: 7, DNS: 8}}
	c.servers, c.agents = []*Node{s1}, []*Node{a1}
	alive := []*api.AgentMember{{Name: "server1", Status: MemberAlive}, {Name: "agent1", Status: MemberAlive}}
	good := []answer{
		{n: s1, running: true, leader: "127.0.0.1:1", members: alive},
		{n: a1, running: true, leader: "127.0.0.1:1"},
	}
	if p := c.judge(good); p != "" {
		t.Fatalf("healthy poll judged %q", p)
	}
	for name, tc := range map[string]struct {
		mod  func([]answer)
		want string
	}{
		"agent paused":   {func(as []answer) { as[1].paused = true }, "agent1 paused"},
		"no leader":      {func(as []answer) { as[1].leader = "" }, "agent1 knows no leader"},
		"other leader":   {func(as []answer) { as[1].leader = "127.0.0.1:9" }, "names leader 127.0.0.1:9"},
		"foreign leader": {func(as []answer) { as[0].leader, as[1].leader = "127.0.0.1:9", "127.0.0.1:9" }, "none of the servers"},
		"agent failed": {func(as []answer) {
			as[0].members = []*api.AgentMember{{Name: "server1", Status: MemberAlive}, {Name: "agent1", Status: MemberFailed}}
		}, "server1 sees agent1 failed"},
		"agent unknown": {func(as []answer) { as[0].members = alive[:1] }, "server1 sees agent1 unknown"},
	} {
		as := slices.Clone(good)
		tc.mod(as)
		if p := c.judge(as); !strings.Contains(p, tc.want) {
			t.Errorf("%s: judged %q, want %q in it", name, p, tc.want)
		}
	}
	if l, err := c.leaderOf(good[:1]); err != nil || l != s1 {
		t.Errorf("leaderOf = %v, %v", l, err)
	}
	paused := []answer{{n: s1, running: true, paused: true}}
	if _, err := c.leaderOf(paused); err == nil {
		t.Error("leaderOf a paused only server: no error")
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 20}
	for i := range 10 {
		b.Write([]byte(strings.Repeat(string(rune('a'+i)), 5) + "\n"))
	}
	if got := b.String(); got != "hhhhh\niiiii\njjjjj\n" {
		t.Fatalf("tail %q", got)
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0035":                         "0.0.0.0:53",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
	} {
		if got, err := parseProcAddr(in); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestStartRefusesUsedDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "server1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server1", "node-id"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	started := false
	_, err := Start(context.Background(), Options{Binary: "/bin/true", Dir: dir,
		StartServer: func(string, *exec.Cmd) error { started = true; return errors.New("no") }})
	if err == nil || !strings.Contains(err.Error(), "not empty") || started {
		t.Fatalf("Start on a used Dir: %v (started %v)", err, started)
	}
	if _, err := os.Stat(filepath.Join(dir, "server1", "node-id")); err != nil {
		t.Fatalf("a given Dir was touched: %v", err)
	}
}
