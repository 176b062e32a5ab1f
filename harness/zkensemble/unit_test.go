package zkensemble

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/freeport"
	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

func TestRenderConfigEnsemble(t *testing.T) {
	got := renderConfig(memberConfig{
		TickMS: 1000, InitLimit: 10, SyncLimit: 5, MaxClientCnxns: 60,
		DataDir: "/run/zk2/data", ClientPort: 2181, AdminPort: 8080,
		Peers: []peer{{1, 2001, 3001, false}, {2, 2002, 3002, false}, {3, 2003, 3003, false}},
		Extra: map[string]string{"snapCount": "1000", "cnxTimeout": "500"},
	})
	want := `# written by chaoslab harness/zkensemble
tickTime=1000
initLimit=10
syncLimit=5
dataDir=/run/zk2/data
clientPort=2181
clientPortAddress=127.0.0.1
maxClientCnxns=60
4lw.commands.whitelist=*
admin.enableServer=true
admin.serverAddress=127.0.0.1
admin.serverPort=8080
reconfigEnabled=false
server.1=127.0.0.1:2001:3001
server.2=127.0.0.1:2002:3002
server.3=127.0.0.1:2003:3003
cnxTimeout=500
snapCount=1000
`
	require.Equal(t, want, got)
}

func TestRenderConfigObserver(t *testing.T) {
	peers := []peer{{1, 2001, 3001, false}, {2, 2002, 3002, false}, {3, 2003, 3003, false}, {4, 2004, 3004, true}}
	voter := renderConfig(memberConfig{TickMS: 2000, InitLimit: 10, SyncLimit: 5, DataDir: "/d", Peers: peers})
	require.NotContains(t, voter, "peerType")
	require.Contains(t, voter, "server.3=127.0.0.1:2003:3003\nserver.4=127.0.0.1:2004:3004:observer\n")
	obs := renderConfig(memberConfig{TickMS: 2000, InitLimit: 10, SyncLimit: 5, DataDir: "/d", Peers: peers, Observer: true})
	require.Contains(t, obs, "peerType=observer\n")
	require.Contains(t, obs, "server.4=127.0.0.1:2004:3004:observer\n")
}

func TestOptionsObservers(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Servers: 3, Observers: -1}, "Observers=-1, want 0..5"},
		{Options{Servers: 3, Observers: MaxObservers + 1}, "Observers=6, want 0..5"},
		{Options{Servers: 1, Observers: 1}, "at least 2 voting members"},
	} {
		_, err := c.o.withDefaults()
		require.ErrorContains(t, err, c.want)
	}
	o := Options{Servers: 3, Observers: 2}
	require.Equal(t, 5, o.members())
}

func TestRenderConfigStandalone(t *testing.T) {
	got := renderConfig(memberConfig{TickMS: 2000, InitLimit: 10, SyncLimit: 5, DataDir: "/d", ClientPort: 1, AdminPort: 2})
	require.NotContains(t, got, "server.")
	require.Contains(t, got, "maxClientCnxns=0\n")
	require.Contains(t, got, "clientPortAddress=127.0.0.1\n")
}

func TestWriteMemberFiles(t *testing.T) {
	dir := t.TempDir()
	c := memberConfig{TickMS: 2000, InitLimit: 10, SyncLimit: 5, DataDir: dir + "/data", ClientPort: 1, AdminPort: 2}
	require.NoError(t, writeMemberFiles(dir+"/zoo.cfg", c.DataDir, 3, c))
	require.FileExists(t, dir+"/zoo.cfg")
	b, err := readFrom(dir+"/data/myid", 0, 100)
	require.NoError(t, err)
	require.Equal(t, "3\n", string(b))
}

func TestFreePortsDistinct(t *testing.T) {
	ps, err := freeport.Loopback(28)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ps {
		require.False(t, seen[p], "port %d repeated", p)
		require.Positive(t, p)
		seen[p] = true
	}
}

// mntrLeader is a leader's answer from ZooKeeper 3.8.0 (Debian), shortened.
const mntrLeader = "zk_version\t3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\n" +
	"zk_server_state\tleader\n" +
	"zk_avg_latency\t0.0\n" +
	"zk_outstanding_requests\t0\n" +
	"zk_num_alive_connections\t1\n" +
	"zk_znode_count\t5\n" +
	"zk_followers\t2\n" +
	"zk_synced_followers\t2\n" +
	"zk_pending_syncs\t0\n"

func TestParseMntr(t *testing.T) {
	kv, err := zkcheck.ParseMntr(mntrLeader)
	require.NoError(t, err)
	require.Equal(t, "leader", kv["zk_server_state"])
	require.Equal(t, "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC", kv["zk_version"])
	require.Equal(t, "2", kv["zk_synced_followers"])
	require.Equal(t, "0.0", kv["zk_avg_latency"])

	kv, err = zkcheck.ParseMntr("zk_server_state follower\r\nzk_outstanding_requests   3\r\n\r\n")
	require.NoError(t, err)
	require.Equal(t, "follower", kv["zk_server_state"])
	require.Equal(t, "3", kv["zk_outstanding_requests"])

	_, err = zkcheck.ParseMntr("This ZooKeeper instance is not currently serving requests\n")
	require.ErrorIs(t, err, ErrNotServing)

	_, err = zkcheck.ParseMntr("")
	require.ErrorContains(t, err, "empty answer")
	_, err = zkcheck.ParseMntr("mntr is not executed because it is not in the whitelist.\n")
	require.ErrorContains(t, err, "no zk_server_state")
}

// fakeServer answers each connection with answer, or never if answer is "".
func fakeServer(t *testing.T, answer string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4)
				if _, err := c.Read(buf); err != nil {
					return
				}
				if answer == "" {
					_, _ = c.Read(make([]byte, 1)) // hang like a SIGSTOPped JVM
					return
				}
				_, _ = c.Write([]byte(answer))
			}()
		}
	}()
	return l.Addr().String()
}

func TestMntrOverTCP(t *testing.T) {
	m := &Member{Name: "zk1", ClientAddr: fakeServer(t, mntrLeader)}
	kv, err := m.Mntr(context.Background())
	require.NoError(t, err)
	require.Equal(t, "leader", kv["zk_server_state"])
	v, err := m.Version(context.Background())
	require.NoError(t, err)
	require.Equal(t, "3.8.0-${mvngit.commit.id}", v)
}

func TestMntrDeadlineOnHangingServer(t *testing.T) {
	m := &Member{Name: "zk1", ClientAddr: fakeServer(t, "")}

	// No deadline in ctx: DefaultProbeTimeout.
	begin := time.Now()
	_, err := m.Mntr(context.Background())
	require.Error(t, err)
	require.ErrorContains(t, err, "mntr zk1")
	require.InDelta(t, DefaultProbeTimeout.Seconds(), time.Since(begin).Seconds(), 0.5)

	// The ctx deadline wins.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	begin = time.Now()
	_, err = m.Mntr(ctx)
	require.Error(t, err)
	require.Less(t, time.Since(begin), 700*time.Millisecond)

	// Cancellation ends the exchange too.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	begin = time.Now()
	_, err = m.FourLetter(ctx, "ruok")
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(begin), 700*time.Millisecond)
}

func TestOptionsDefaults(t *testing.T) {
	requireJava := func() {
		if len(missingDeps()) > 0 {
			t.Skip("java or ZooKeeper jars missing")
		}
	}
	_, err := Options{Servers: 8}.withDefaults()
	require.ErrorContains(t, err, "Servers=8")
	_, err = Options{TickMS: -1}.withDefaults()
	require.ErrorContains(t, err, "TickMS=-1")
	_, err = Options{Classpath: "/nonexistent/zk.jar"}.withDefaults()
	if err != nil && strings.Contains(err.Error(), "find java") {
		t.Skip("no java")
	}
	require.ErrorContains(t, err, "missing /nonexistent/zk.jar")

	requireJava()
	o, err := Options{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, 3, o.Servers)
	require.Equal(t, 2000, o.TickMS)
	require.Equal(t, 10, o.InitLimit)
	require.Equal(t, 5, o.SyncLimit)
	require.Equal(t, 256, o.HeapMB)
	require.Equal(t, DefaultClasspath, o.Classpath)
	require.NotNil(t, o.Logger)
}

func TestHealth(t *testing.T) {
	m1, m2, m3 := &Member{ID: 1, Name: "zk1"}, &Member{ID: 2, Name: "zk2"}, &Member{ID: 3, Name: "zk3"}
	st := func(m *Member, state string) status {
		return status{M: m, Running: true, State: state, KV: map[string]string{"zk_server_state": state}}
	}

	l, bad, prob := health([]status{st(m1, "follower"), st(m2, "leader"), st(m3, "follower")})
	require.Equal(t, m2, l)
	require.Empty(t, bad)
	require.Empty(t, prob)

	paused := st(m2, "")
	paused.Paused = true
	_, bad, prob = health([]status{st(m1, "leader"), paused, st(m3, "follower")})
	require.Equal(t, []*Member{m2}, bad)
	require.Contains(t, prob, "zk2=paused")

	_, bad, prob = health([]status{st(m1, "leader"), st(m2, "follower"), st(m3, "leader")})
	require.Equal(t, []*Member{m1, m3}, bad)
	require.Contains(t, prob, "two leaders zk1 and zk3")

	notServing := status{M: m3, Running: true, Err: errors.Join(ErrNotServing)}
	_, bad, prob = health([]status{st(m1, "leader"), st(m2, "follower"), notServing})
	require.Equal(t, []*Member{m3}, bad)
	require.Contains(t, prob, "zk3=not serving")

	// A killed member does not count; the leader must count its followers.
	lead := st(m1, "leader")
	lead.KV["zk_synced_followers"] = "0"
	_, bad, prob = health([]status{lead, st(m2, "follower"), {M: m3}})
	require.Equal(t, []*Member{m1}, bad)
	require.Contains(t, prob, "0 synced followers")
	lead.KV["zk_synced_followers"] = "1"
	l, _, prob = health([]status{lead, st(m2, "follower"), {M: m3}})
	require.Equal(t, m1, l)
	require.Empty(t, prob)

	// Observers are healthy when the leader counts them as synced.
	m4 := &Member{ID: 4, Name: "zk4", Observer: true}
	lead = st(m1, "leader")
	lead.KV["zk_synced_followers"], lead.KV["zk_synced_observers"] = "2", "0"
	_, bad, prob = health([]status{lead, st(m2, "follower"), st(m3, "follower"), st(m4, "observer")})
	require.Equal(t, []*Member{m1}, bad)
	require.Contains(t, prob, "leader has 0 synced observers, 1 members observe")
	lead.KV["zk_synced_observers"] = "1"
	l, _, prob = health([]status{lead, st(m2, "follower"), st(m3, "follower"), st(m4, "observer")})
	require.Equal(t, m1, l)
	require.Empty(t, prob)

	_, _, prob = health([]status{st(m1, "follower"), st(m2, "follower")})
	require.Contains(t, prob, "no leader")
	_, _, prob = health([]status{{M: m1}})
	require.Equal(t, "no member running", prob)

	l, err := leaderOf([]status{st(m1, "standalone")})
	require.NoError(t, err)
	require.Equal(t, m1, l)
	_, err = leaderOf([]status{st(m1, "leader"), st(m2, "leader")})
	require.ErrorContains(t, err, "2 leaders zk1,zk2")
}

func TestEnsureInstalledNoopWhenPresent(t *testing.T) {
	if len(missingDeps()) > 0 {
		t.Skip("ZooKeeper not installed here; EnsureInstalled would run apt-get")
	}
	require.NoError(t, EnsureInstalled(context.Background(), nil))
}

func TestParseZxid(t *testing.T) {
	srvr := "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nLatency min/avg/max: 0/0.0/0\nReceived: 3\nSent: 2\nConnections: 1\nOutstanding: 0\nZxid: 0x100000002\nMode: follower\nNode count: 5\n"
	z, err := ParseZxid(srvr)
	require.NoError(t, err)
	require.Equal(t, uint64(0x100000002), z)
	_, err = ParseZxid("This ZooKeeper instance is not currently serving requests\n")
	require.ErrorIs(t, err, ErrNotServing)
	_, err = ParseZxid("Mode: follower\n")
	require.ErrorContains(t, err, "no Zxid line")
}
