package dockerzk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

func TestServersValue(t *testing.T) {
	require.Equal(t, "server.1=zk1:2888:3888;2181", ServersValue(1))
	require.Equal(t, "server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 server.3=zk3:2888:3888;2181", ServersValue(3))
}

func TestServersWithObservers(t *testing.T) {
	require.Equal(t, ServersValue(3), ServersWithObservers(3, 0))
	require.Equal(t, "server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 server.3=zk3:2888:3888;2181 "+
		"server.4=zk4:2888:3888:observer;2181 server.5=zk5:2888:3888:observer;2181", ServersWithObservers(3, 2))
	env := ServerConfig{ID: 4, Servers: ServersWithObservers(3, 2), TickMS: 2000, InitLimit: 10, SyncLimit: 5, HeapMB: 256, Observer: true}.Env()
	require.Equal(t, "peerType=observer", env["ZOO_CFG_EXTRA"])
	env = ServerConfig{ID: 3, Servers: ServersWithObservers(3, 2), TickMS: 2000, InitLimit: 10, SyncLimit: 5, HeapMB: 256}.Env()
	require.NotContains(t, env, "ZOO_CFG_EXTRA", "a voter has no peerType line")
}

func TestEnsembleObservers(t *testing.T) {
	ctx := context.Background()
	o, err := EnsembleOptions{Image: "x", Servers: 3, Observers: 2}.withDefaults(ctx)
	require.NoError(t, err)
	require.Equal(t, 5, o.members())
	e := &Ensemble{opts: o}
	for id := 1; id <= o.members(); id++ {
		e.members = append(e.members, &Member{id: id, ens: e})
	}
	require.False(t, e.Member(3).Observer())
	require.True(t, e.Member(4).Observer())
	require.True(t, e.Member(5).Observer())
	for _, bad := range []struct {
		o    EnsembleOptions
		want string
	}{
		{EnsembleOptions{Image: "x", Observers: -1}, "Observers=-1, want 0..5"},
		{EnsembleOptions{Image: "x", Observers: MaxObservers + 1}, "Observers=6, want 0..5"},
		{EnsembleOptions{Image: "x", Servers: 1, Observers: 1}, "at least 2 voting members"},
	} {
		_, err := bad.o.withDefaults(ctx)
		require.ErrorContains(t, err, bad.want)
	}
}

func TestNames(t *testing.T) {
	require.Equal(t, "zk2", MemberName(2))
	require.Equal(t, "run-7-zk3", ContainerName("run-7", 3))
}

func TestServerConfigEnv(t *testing.T) {
	env := ServerConfig{
		ID: 2, Servers: ServersValue(3), TickMS: 1000, InitLimit: 10, SyncLimit: 5,
		MaxClientCnxns: 0, HeapMB: 192, JVMFlags: []string{"-XX:+UseSerialGC"},
	}.Env()
	require.Equal(t, []string{
		"JVMFLAGS=-Xmx192m -XX:+UseSerialGC",
		"ZK_SERVER_HEAP=192",
		"ZOO_4LW_COMMANDS_WHITELIST=*",
		"ZOO_INIT_LIMIT=10",
		"ZOO_MAX_CLIENT_CNXNS=0",
		"ZOO_MY_ID=2",
		"ZOO_SERVERS=server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 server.3=zk3:2888:3888;2181",
		"ZOO_STANDALONE_ENABLED=true",
		"ZOO_SYNC_LIMIT=5",
		"ZOO_TICK_TIME=1000",
	}, EnvList(env))

	// No servers: the image's default (standalone) stays.
	env = ServerConfig{ID: 1, TickMS: 2000, InitLimit: 10, SyncLimit: 5, HeapMB: 256}.Env()
	require.NotContains(t, env, "ZOO_SERVERS")
	require.Equal(t, "-Xmx256m", env["JVMFLAGS"])
}

func TestEnsembleOptionsDefaults(t *testing.T) {
	ctx := context.Background()
	o, err := EnsembleOptions{Image: "x"}.withDefaults(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, o.Servers)
	require.Equal(t, 2000, o.TickMS)
	require.Equal(t, 10, o.InitLimit)
	require.Equal(t, 5, o.SyncLimit)
	require.Equal(t, 256, o.HeapMB)
	require.Equal(t, DefaultStartupTimeout, o.StartupTimeout)
	require.Regexp(t, `^chaoslab-[0-9a-f]{8}$`, o.RunID)
	require.NotNil(t, o.Logger)

	for _, bad := range []EnsembleOptions{
		{Image: "x", Servers: 8}, {Image: "x", Servers: -1}, {Image: "x", TickMS: -1},
		{Image: "x", MaxClientCnxns: -1}, {Image: "x", RunID: "bad id"},
	} {
		_, err := bad.withDefaults(ctx)
		require.Error(t, err, "%+v", bad)
	}
}

func TestImageCandidates(t *testing.T) {
	t.Setenv(ImageEnv, "")
	require.Equal(t, []string{DefaultImage, OfficialImage}, ImageCandidates())
	t.Setenv(ImageEnv, "mine:1")
	require.Equal(t, []string{"mine:1", DefaultImage, OfficialImage}, ImageCandidates())
}

func TestOptionsAreCustomizers(t *testing.T) {
	var s options
	for _, o := range []Option{WithHeapMB(64), WithJVMFlags("-a", "-b"), WithStartupTimeout(time.Second), WithPull()} {
		require.NoError(t, o(&s))
		require.NoError(t, o.Customize(nil))
	}
	require.Equal(t, options{heapMB: 64, jvmFlags: []string{"-a", "-b"}, startupTimeout: time.Second, pull: true}, s)
	require.Error(t, WithHeapMB(0)(&s))
}

func TestParseMntr(t *testing.T) {
	kv, err := zkcheck.ParseMntr("zk_version\t3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nzk_server_state\tfollower\n")
	require.NoError(t, err)
	require.Equal(t, "follower", kv["zk_server_state"])
	require.Equal(t, "3.8.0-${mvngit.commit.id}", versionOf(kv))
	_, err = zkcheck.ParseMntr("This ZooKeeper instance is not currently serving requests\n")
	require.ErrorIs(t, err, ErrNotServing)
	_, err = zkcheck.ParseMntr("")
	require.ErrorContains(t, err, "empty answer")
}

func TestHealthRules(t *testing.T) {
	e := &Ensemble{}
	for i := 1; i <= 3; i++ {
		e.members = append(e.members, &Member{id: i, name: MemberName(i), ens: e})
	}
	m := e.members
	st := func(i int, state string) status {
		return status{M: m[i], Running: true, State: state, KV: map[string]string{"zk_server_state": state}}
	}
	l, bad, prob := health([]status{st(0, StateFollower), st(1, StateLeader), st(2, StateFollower)})
	require.Equal(t, m[1], l)
	require.Empty(t, bad)
	require.Empty(t, prob)

	// Two leaders (just after a paused leader resumes).
	_, bad, prob = health([]status{st(0, StateLeader), st(1, StateLeader), st(2, StateFollower)})
	require.Equal(t, []*Member{m[0], m[1]}, bad)
	require.Contains(t, prob, "two leaders")

	// A paused member is not healthy; a stopped one does not count.
	p := st(2, "")
	p.Paused = true
	_, bad, prob = health([]status{st(0, StateLeader), st(1, StateFollower), p})
	require.Equal(t, []*Member{m[2]}, bad)
	require.Contains(t, prob, "zk3=paused")
	stopped := status{M: m[2]}
	l, _, prob = health([]status{st(0, StateLeader), st(1, StateFollower), stopped})
	require.Equal(t, m[0], l)
	require.Empty(t, prob)

	// A disconnected member does not answer.
	d := st(2, "")
	d.Err = errors.New("dial: connection refused")
	_, bad, _ = health([]status{st(0, StateLeader), st(1, StateFollower), d})
	require.Equal(t, []*Member{m[2]}, bad)

	// The leader must count every follower as synced.
	ls := st(0, StateLeader)
	ls.KV["zk_synced_followers"] = "1"
	_, bad, prob = health([]status{ls, st(1, StateFollower), st(2, StateFollower)})
	require.Equal(t, []*Member{m[0]}, bad)
	require.Contains(t, prob, "1 synced followers, 2 members follow")

	ld, err := leaderOf([]status{st(0, StateFollower), st(1, StateLeader), stopped})
	require.NoError(t, err)
	require.Equal(t, m[1], ld)
	_, err = leaderOf([]status{st(0, StateFollower), stopped})
	require.ErrorContains(t, err, "no leader")
}

// localTarget stands for a zkensemble member: a Target without the
// container capabilities.
type localTarget struct{}

func (localTarget) Name() string                  { return "zk1" }
func (localTarget) Pause() error                  { return nil }
func (localTarget) Resume() error                 { return nil }
func (localTarget) Kill() error                   { return nil }
func (localTarget) Restart(context.Context) error { return nil }

func TestContainerFaultsRegistered(t *testing.T) {
	m := &Member{id: 1, name: "zk1"}
	for _, name := range []string{"cpu-throttle", "replace", "disconnect"} {
		f, err := faults.New(name)
		require.NoError(t, err, name)
		err = f.Available(localTarget{})
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "local processes", name)
		require.NoError(t, f.Available(m), name)
	}
	require.NoError(t, (&faults.CPUThrottle{Cores: 0.5}).Available(m))
	require.NotEmpty(t, (&faults.CPUThrottle{}).Check(), "Cores is required")
}

func TestLabelsOfMembers(t *testing.T) {
	l := docker.MergeLabels(docker.Labels("r"), map[string]string{docker.LabelComponent: Component, docker.LabelMember: MemberName(1)})
	require.Equal(t, map[string]string{
		"org.chaoslab.managed": "true", "org.chaoslab.run": "r",
		"org.chaoslab.component": "zookeeper", "org.chaoslab.member": "zk1", "org.chaoslab.owner": docker.Owner(),
	}, l)
}
