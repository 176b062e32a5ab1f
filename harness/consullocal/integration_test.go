package consullocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/limits"
)

// The integration tests run real consul processes. The binary comes from
// images.ConsulBinary: $CHAOSLAB_CONSUL, the cache `chaoslab images build`
// fills, or a build from tools/consul (~4.5 min cold on 2 cores: run with
// -timeout 20m then).

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func consulBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (runs consul processes): not with -short")
	}
	binOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		binPath, binErr = images.ConsulBinary(ctx, images.Options{Progress: testWriter{t}})
	})
	if binErr != nil {
		t.Skipf("no consul binary (set CHAOSLAB_CONSUL, or run `chaoslab images build --only consul`): %v", binErr)
	}
	return binPath
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// logs writes every node's output to <dir>/<node>.log and, if the test
// fails, logs their ends. The folder is temporary, or
// $CONSULLOCAL_LOGDIR/<test> (kept).
func logs(t *testing.T) func(string) *os.File {
	dir := t.TempDir()
	if d := os.Getenv("CONSULLOCAL_LOGDIR"); d != "" {
		dir = filepath.Join(d, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var files []*os.File
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range files {
			f.Close()
		}
		if t.Failed() {
			out, _ := exec.Command("sh", "-c", "tail -n 30 "+dir+"/*.log").CombinedOutput()
			t.Logf("node logs in %s:\n%s", dir, out)
		}
	})
	return func(node string) *os.File {
		f, err := os.Create(dir + "/" + node + ".log")
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		files = append(files, f)
		mu.Unlock()
		return f
	}
}

// resolver asks the DNS interface at addr (and nothing else).
func resolver(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// eventually retries f every 100 ms until it succeeds or d has passed.
func eventually(t *testing.T, d time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < d {
		if err = f(); err == nil {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: %v", what, d, err)
	return 0
}

// resolveWeb looks web.service.consul up (SRV and A) at a DNS address.
func resolveWeb(ctx context.Context, dnsAddr string) error {
	r := resolver(dnsAddr)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, srvs, err := r.LookupSRV(ctx, "", "", "web.service.consul.")
	if err != nil {
		return err
	}
	if len(srvs) != 1 || srvs[0].Port != 8080 {
		return fmt.Errorf("SRV %+v, want one with port 8080", srvs)
	}
	ips, err := r.LookupHost(ctx, "web.service.consul.")
	if err != nil {
		return err
	}
	if !slices.Equal(ips, []string{"127.0.0.1"}) {
		return fmt.Errorf("A %v, want 127.0.0.1", ips)
	}
	return nil
}

// allPids returns the pids of every running node.
func allPids(c *Cluster) map[string]int {
	out := map[string]int{}
	for _, n := range c.Nodes() {
		if p := n.Pid(); p != 0 {
			out[n.Name()] = p
		}
	}
	return out
}

// checkGone checks that none of pids is a process any more (or, if the
// pid was reused already, not one of ours: its command line does not name
// the cluster's folder).
func checkGone(t *testing.T, pids map[string]int, dir string) {
	t.Helper()
	for name, pid := range pids {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmdline), dir) {
			t.Errorf("%s (pid %d) still there after Close: %q", name, pid, cmdline)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary folder %s still there after Close (%v)", dir, err)
	}
}

func TestIntegration_ConsulLocal(t *testing.T) {
	bin := consulBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logFile := logs(t)
	var hookMu sync.Mutex
	var hooked []string
	hook := func(node string, cmd *exec.Cmd) error {
		hookMu.Lock()
		hooked = append(hooked, node)
		hookMu.Unlock()
		return cmd.Start()
	}
	began := time.Now()
	c, err := Start(ctx, Options{
		Agents: 2, Binary: bin,
		Logs:        func(n string) io.Writer { return logFile(n) },
		StartServer: hook, StartAgent: hook,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1 server + 2 agents healthy in %v", time.Since(began).Round(time.Millisecond))
	dir := c.Dir()
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	if want := []string{"server1", "agent1", "agent2"}; !slices.Equal(hooked, want) {
		t.Errorf("start hooks ran for %v, want %v", hooked, want)
	}
	s1, a1, a2 := c.Servers()[0], c.Agents()[0], c.Agents()[1]
	for _, n := range c.Nodes() {
		t.Logf("%s %s pid %d http %s dns %s serf %s server %q", n.Name(), n.Role(), n.Pid(), n.HTTPAddr(), n.DNSAddr(), n.SerfLANAddr(), n.ServerAddr())
		if host, _, _ := net.SplitHostPort(n.HTTPAddr()); !net.ParseIP(host).IsLoopback() {
			t.Errorf("%s: HTTP on %s", n.Name(), n.HTTPAddr())
		}
	}
	if s1.Role() != RoleServer || a1.Role() != RoleAgent || c.Node("agent2") != a2 {
		t.Fatal("roles or names")
	}
	l, err := c.Leader(ctx)
	if err != nil || l != s1 {
		t.Fatalf("Leader = %v, %v; want server1", l, err)
	}

	// Only loopback listeners, and only the ports the nodes were given.
	checkListeners(t, c)

	// A service registered at agent1 resolves through agent2's DNS.
	cli1, err := c.NewClient(a1)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli1.Agent().ServiceRegister(&api.AgentServiceRegistration{Name: "web", ID: "web1", Port: 8080}); err != nil {
		t.Fatal(err)
	}
	took := eventually(t, 10*time.Second, "web through agent2's DNS", func() error { return resolveWeb(ctx, a2.DNSAddr()) })
	t.Logf("service registered at agent1 resolved through agent2's DNS after %v", took.Round(time.Millisecond))
	cli2, err := a2.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	ents, _, err := cli2.Health().Service("web", "", true, nil)
	if err != nil || len(ents) != 1 || ents[0].Node.Node != "agent1" {
		t.Fatalf("health of web through agent2: %v, %v", ents, err)
	}

	// Pause and resume agent2.
	if err := a2.Pause(); err != nil {
		t.Fatal(err)
	}
	if !a2.Paused() || !a2.Running() {
		t.Fatal("agent2 not paused")
	}
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	_, err = a2.LeaderAddr(pctx)
	pcancel()
	if err == nil {
		t.Fatal("a paused agent answered")
	}
	hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
	if err := c.WaitHealthy(hctx); err == nil {
		t.Fatal("healthy with a paused agent")
	}
	hcancel()
	if err := a2.Resume(); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("healthy %v after agent2 resumed", time.Since(began).Round(time.Millisecond))
	if err := resolveWeb(ctx, a2.DNSAddr()); err != nil {
		t.Fatalf("after resume: %v", err)
	}

	// Kill the server and restart it on the same data.
	pid := s1.Pid()
	if err := s1.Kill(); err != nil {
		t.Fatal(err)
	}
	if s1.Running() || s1.Pid() != 0 {
		t.Fatal("server1 still running after Kill")
	}
	<-s1.Done()
	if st := s1.ExitState(); st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit state %v, want killed", st)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("pid %d still in /proc after Kill", pid)
	}
	if err := c.WaitHealthy(ctx); err == nil || !strings.Contains(err.Error(), "server1") {
		t.Fatalf("WaitHealthy with server1 killed: %v", err)
	}
	began = time.Now()
	if err := s1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Since(began)
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("server1 restarted (answers) in %v, cluster healthy %v after the restart began", restarted.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	if s1.Pid() == pid || s1.ExitState() != nil {
		t.Fatal("server1 is the old process")
	}
	if slices.Compare(hooked, []string{"server1", "agent1", "agent2", "server1"}) != 0 {
		t.Errorf("start hooks ran for %v, want the restart's too", hooked)
	}
	eventually(t, 10*time.Second, "web after the server's restart", func() error { return resolveWeb(ctx, a2.DNSAddr()) })

	// Close leaves nothing behind, even with a paused node.
	if err := a1.Pause(); err != nil {
		t.Fatal(err)
	}
	pids := allPids(c)
	if len(pids) != 3 {
		t.Fatalf("pids %v", pids)
	}
	began = time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	t.Logf("Close took %v", time.Since(began).Round(time.Millisecond))
	checkGone(t, pids, dir)
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := a1.Restart(ctx); err == nil {
		t.Fatal("Restart after Close started a node")
	}
}

func TestIntegration_ThreeServers(t *testing.T) {
	bin := consulBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logFile := logs(t)
	began := time.Now()
	c, err := Start(ctx, Options{Servers: 3, Agents: 2, Binary: bin, Logs: func(n string) io.Writer { return logFile(n) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3 servers + 2 agents healthy in %v", time.Since(began).Round(time.Millisecond))
	dir := c.Dir()
	defer c.Close()
	checkListeners(t, c)

	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := c.NewClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.KV().Put(&api.KVPair{Key: "chaoslab/x", Value: []byte("1")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l == old || !l.IsServer() || !l.Running() {
		t.Fatalf("leader after killing %s: %s", old.Name(), l.Name())
	}
	t.Logf("leader %s killed; %s leads %v later", old.Name(), l.Name(), time.Since(killed).Round(time.Millisecond))
	// The agents reach the new leader: a write through agent1 succeeds.
	took := eventually(t, 20*time.Second, "a write through agent1", func() error {
		_, err := cli.KV().Put(&api.KVPair{Key: "chaoslab/x", Value: []byte("2")}, nil)
		return err
	})
	t.Logf("a write through agent1 succeeded %v after the leader's new one was found", took.Round(time.Millisecond))

	began = time.Now()
	if err := old.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s restarted, cluster healthy in %v", old.Name(), time.Since(began).Round(time.Millisecond))
	kv, _, err := cli.KV().Get("chaoslab/x", &api.QueryOptions{RequireConsistent: true})
	if err != nil || kv == nil || string(kv.Value) != "2" {
		t.Fatalf("read back: %v, %v", kv, err)
	}
	pids := allPids(c)
	if len(pids) != 5 {
		t.Fatalf("pids %v", pids)
	}
	began = time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(began).Round(time.Millisecond))
	checkGone(t, pids, dir)
}

// checkListeners checks, from /proc/net, that the nodes' processes listen
// on 127.0.0.1 only and on no port but the ones they were given.
func checkListeners(t *testing.T, c *Cluster) {
	t.Helper()
	for _, n := range c.Nodes() {
		want := map[string]bool{n.HTTPAddr(): true, n.DNSAddr(): true, n.SerfLANAddr(): true}
		if n.IsServer() {
			want[n.ServerAddr()] = true
			want[net.JoinHostPort(Address, fmt.Sprint(n.ports.SerfWAN))] = true
		}
		got, err := listeners(n.Pid())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			if !want[a] {
				t.Errorf("%s listens on %s, not one of its addresses %v", n.Name(), a, want)
			}
		}
		if len(got) == 0 {
			t.Errorf("%s listens on nothing", n.Name())
		}
	}
}

// TestIntegration_NothingOutlivesHarness starts a cluster in a child test
// process (TestHelperCluster), SIGKILLs that process and checks that its
// consul processes die too (Pdeathsig).
func TestIntegration_NothingOutlivesHarness(t *testing.T) {
	bin := consulBinary(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCluster$", "-test.v")
	cmd.Env = append(os.Environ(), "CONSULLOCAL_HELPER=1", "CHAOSLAB_CONSUL="+bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = testWriter{t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	var dir string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "CLUSTER "); ok {
			f := strings.Fields(rest)
			dir = f[0]
			for _, p := range f[1:] {
				n, _ := strconv.Atoi(p)
				pids = append(pids, n)
			}
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("helper gave pids %v (%v)", pids, sc.Err())
	}
	defer os.RemoveAll(dir)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	eventually(t, 10*time.Second, "consul processes gone after the harness was killed", func() error {
		for _, p := range pids {
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && strings.Contains(string(cmdline), dir) {
				return fmt.Errorf("pid %d still there", p)
			}
		}
		return nil
	})
}

// TestHelperCluster is the child of TestIntegration_NothingOutlivesHarness:
// it starts 1 server and 1 agent, prints their folder and pids and waits
// to be killed.
func TestHelperCluster(t *testing.T) {
	if os.Getenv("CONSULLOCAL_HELPER") != "1" {
		t.Skip("only as the child of TestIntegration_NothingOutlivesHarness")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Agents: 1, Binary: os.Getenv("CHAOSLAB_CONSUL")})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("CLUSTER %s %d %d\n", c.Dir(), c.Servers()[0].Pid(), c.Agents()[0].Pid())
	time.Sleep(time.Minute)
	c.Close()
}

// TestIntegration_AgentInMemoryCgroup starts the client agent through a
// StartAgent hook that puts it in a memory cgroup of harness/limits (born
// inside it), at Start and again at Restart.
func TestIntegration_AgentInMemoryCgroup(t *testing.T) {
	bin := consulBinary(t)
	if mode, why := limits.Detect(); mode == limits.ModeNone {
		t.Skipf("no cgroups here: %s", why)
	}
	m, err := limits.NewManager(fmt.Sprintf("consullocal-test-%d", os.Getpid()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Mode() == limits.ModeNone {
		t.Skipf("no cgroups here: %s", m.Reason())
	}
	g, err := m.NewGroup("agent1", limits.Limits{MemoryBytes: 512 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logFile := logs(t)
	c, err := Start(ctx, Options{
		Agents: 1, Binary: bin, Logs: func(n string) io.Writer { return logFile(n) },
		StartAgent: func(node string, cmd *exec.Cmd) error { return g.Start(cmd) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a1 := c.Agents()[0]
	check := func(when string) {
		t.Helper()
		if !g.Contains(a1.Pid()) {
			t.Fatalf("%s: agent1 (pid %d) is not in its cgroup", when, a1.Pid())
		}
		if g.Contains(c.Servers()[0].Pid()) {
			t.Fatalf("%s: server1 is in agent1's cgroup", when)
		}
		st, err := g.Stats()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: agent1's cgroup (%s) charges %d MB of %d MB", when, st.Mode, st.MemoryBytes>>20, st.MemoryLimitBytes>>20)
	}
	check("started")
	if err := a1.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := a1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	check("restarted")
}

// TestIntegration_StartFailures: a node that exits at once, and a start
// hook that fails, make Start fail soon, with the cause, and leave no
// process behind.
func TestIntegration_StartFailures(t *testing.T) {
	bin := consulBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var pids []int
	record := func(node string, cmd *exec.Cmd) error {
		err := cmd.Start()
		if err == nil {
			pids = append(pids, cmd.Process.Pid)
		}
		return err
	}
	began := time.Now()
	c, err := Start(ctx, Options{Agents: 1, Binary: bin, ExtraArgs: []string{"-no-such-flag"}, StartServer: record, StartAgent: record})
	if c != nil || err == nil || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("Start with a bad flag: %v, %v", c, err)
	}
	t.Logf("bad flag: failed after %v: %v", time.Since(began).Round(time.Millisecond), err)

	boom := fmt.Errorf("boom")
	c, err = Start(ctx, Options{Agents: 1, Binary: bin, StartServer: record,
		StartAgent: func(node string, cmd *exec.Cmd) error {
			if err := record(node, cmd); err != nil {
				return err
			}
			return boom // started, then failed: the process must be killed
		}})
	if c != nil || !errors.Is(err, boom) {
		t.Fatalf("Start with a failing hook: %v, %v", c, err)
	}
	if len(pids) != 4 {
		t.Fatalf("pids %v", pids)
	}
	for _, p := range pids {
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && strings.Contains(string(cmdline), "consul") {
			t.Errorf("pid %d still there: %q", p, cmdline)
		}
	}
}
