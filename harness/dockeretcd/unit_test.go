package dockeretcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/faults"
)

func TestNames(t *testing.T) {
	require.Equal(t, "etcd2", MemberName(2))
	require.Equal(t, "run-7-etcd3", ContainerName("run-7", 3))
	require.Equal(t, "http://etcd1:2380", PeerURL("etcd1"))
	require.Equal(t, "http://etcd1:2379", ClientURL("etcd1"))
	require.Equal(t, "etcd1=http://etcd1:2380", InitialCluster(1))
	require.Equal(t, "etcd1=http://etcd1:2380,etcd2=http://etcd2:2380,etcd3=http://etcd3:2380", InitialCluster(3))
}

func TestMemberConfigArgs(t *testing.T) {
	args := MemberConfig{
		Name: "etcd2", InitialCluster: InitialCluster(3), ClusterToken: "run-1",
		HeartbeatMS: 50, ElectionMS: 500, QuotaBytes: 1 << 30, LogLevel: "warn",
		ExtraArgs: []string{"--snapshot-count=1000"},
	}.Args()
	require.Equal(t, []string{
		"--name=etcd2",
		"--data-dir=/tmp/etcd",
		"--listen-client-urls=http://0.0.0.0:2379",
		"--advertise-client-urls=http://etcd2:2379",
		"--listen-peer-urls=http://0.0.0.0:2380",
		"--initial-advertise-peer-urls=http://etcd2:2380",
		"--listen-metrics-urls=http://0.0.0.0:2381",
		"--initial-cluster=etcd1=http://etcd1:2380,etcd2=http://etcd2:2380,etcd3=http://etcd3:2380",
		"--initial-cluster-state=new",
		"--initial-cluster-token=run-1",
		"--heartbeat-interval=50",
		"--election-timeout=500",
		"--quota-backend-bytes=1073741824",
		"--log-level=warn",
		"--snapshot-count=1000",
	}, args)

	// Defaults: a single-member cluster etcd1, etcd's own timing.
	def := MemberConfig{}.Args()
	require.Equal(t, []string{
		"--name=etcd1",
		"--data-dir=/tmp/etcd",
		"--listen-client-urls=http://0.0.0.0:2379",
		"--advertise-client-urls=http://etcd1:2379",
		"--listen-peer-urls=http://0.0.0.0:2380",
		"--initial-advertise-peer-urls=http://etcd1:2380",
		"--listen-metrics-urls=http://0.0.0.0:2381",
		"--initial-cluster=etcd1=http://etcd1:2380",
		"--initial-cluster-state=new",
		"--initial-cluster-token=chaoslab",
	}, def)
	require.Equal(t, 1, MemberConfig{}.Members())
	require.Equal(t, 3, MemberConfig{Name: "etcd1", InitialCluster: InitialCluster(3)}.Members())

	require.NoError(t, MemberConfig{}.Check())
	for _, bad := range []MemberConfig{
		{ClusterState: "old"},
		{HeartbeatMS: -1},
		{HeartbeatMS: 100, ElectionMS: 400},
		{ElectionMS: 300},
		{Name: "etcd4", InitialCluster: InitialCluster(3)},
	} {
		require.Error(t, bad.Check(), "%+v", bad)
	}
}

func TestClusterMemberConfig(t *testing.T) {
	o := Options{Members: 3, RunID: "r1", DataDir: DefaultDataDir, ElectionMS: 500, HeartbeatMS: 50}
	c := o.memberConfig(3)
	require.Equal(t, "etcd3", c.Name)
	require.Equal(t, InitialCluster(3), c.InitialCluster)
	require.Equal(t, StateNew, c.ClusterState)
	require.Equal(t, "r1", c.ClusterToken, "the run id is the cluster token")
	require.Contains(t, c.Args(), "--election-timeout=500")
}

func TestOptionsDefaults(t *testing.T) {
	ctx := context.Background()
	o, err := Options{Image: "x"}.withDefaults(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, o.Members)
	require.Equal(t, DefaultDataDir, o.DataDir)
	require.Equal(t, DefaultStartupTimeout, o.StartupTimeout)
	require.Regexp(t, `^chaoslab-[0-9a-f]{8}$`, o.RunID)
	require.NotNil(t, o.Logger)

	for _, bad := range []Options{
		{Image: "x", Members: 8}, {Image: "x", Members: -1}, {Image: "x", RunID: "bad id"},
		{Image: "x", HeartbeatMS: 300, ElectionMS: 1000}, {Image: "x", QuotaBytes: -1},
	} {
		_, err := bad.withDefaults(ctx)
		require.Error(t, err, "%+v", bad)
	}
}

func TestImageCandidates(t *testing.T) {
	t.Setenv(ImageEnv, "")
	require.Equal(t, []string{"chaoslab/etcd:v3.6.16", "gcr.io/etcd-development/etcd:v3.6.16"}, ImageCandidates())
	t.Setenv(ImageEnv, "mine:1")
	require.Equal(t, []string{"mine:1", DefaultImage, OfficialImage}, ImageCandidates())
}

func TestOptionsAreCustomizers(t *testing.T) {
	s := options{cfg: MemberConfig{}.withDefaults()}
	for _, o := range []Option{
		WithMemberConfig(MemberConfig{Name: "etcd2", InitialCluster: InitialCluster(3)}),
		WithTimings(50, 500), WithExtraArgs("-a", "-b"), WithStartupTimeout(time.Second), WithPull(),
	} {
		require.NoError(t, o(&s))
		require.NoError(t, o.Customize(nil))
	}
	require.Equal(t, "etcd2", s.cfg.Name)
	require.Equal(t, []string{"-a", "-b"}, s.cfg.ExtraArgs)
	require.Equal(t, 500, s.cfg.ElectionMS)
	require.Equal(t, time.Second, s.startupTimeout)
	require.True(t, s.pull)
	require.Error(t, WithTimings(100, 200)(&s))
	require.Error(t, WithMemberConfig(MemberConfig{ClusterState: "x"})(&s))
}

func TestPublishPortsOnLoopbackOnly(t *testing.T) {
	req := testcontainers.GenericContainerRequest{}
	require.NoError(t, docker.PublishPorts(ClientPort, MetricsPort)(&req))
	require.ElementsMatch(t, []string{ClientPort, MetricsPort}, req.ExposedPorts)
	require.NotNil(t, req.HostConfigModifier)
}

func TestHealthRules(t *testing.T) {
	c := &Cluster{}
	for i := 1; i <= 3; i++ {
		c.members = append(c.members, &Member{id: i, name: MemberName(i), cl: c})
	}
	m := c.members
	// Member i has ID 0x10+i.
	st := func(i int, leader uint64, term uint64) status {
		return status{m: m[i], running: true, memberID: uint64(0x11 + i), leader: leader, term: term}
	}
	const l2 = 0x12
	l, bad, prob := health([]status{st(0, l2, 3), st(1, l2, 3), st(2, l2, 3)})
	require.Equal(t, m[1], l)
	require.Empty(t, bad)
	require.Empty(t, prob)

	// Two claim to lead (the old leader just resumed).
	_, bad, prob = health([]status{st(0, 0x11, 2), st(1, l2, 3), st(2, l2, 3)})
	require.Equal(t, []*Member{m[0], m[1]}, bad)
	require.Contains(t, prob, "two leaders etcd1 and etcd2")

	// Not the same term.
	_, bad, prob = health([]status{st(0, l2, 2), st(1, l2, 3), st(2, l2, 3)})
	require.Equal(t, []*Member{m[0]}, bad)
	require.Contains(t, prob, "etcd1 is in term 2, leader etcd2 in term 3")

	// A follower that names no leader.
	_, bad, prob = health([]status{st(0, 0, 3), st(1, l2, 3), st(2, l2, 3)})
	require.Equal(t, []*Member{m[0]}, bad)
	require.Contains(t, prob, "etcd1 names leader none, not etcd2")

	// A paused member is not healthy; a stopped one does not count.
	p := status{m: m[2], running: true, paused: true}
	_, bad, prob = health([]status{st(0, l2, 3), st(1, l2, 3), p})
	require.Equal(t, []*Member{m[2]}, bad)
	require.Contains(t, prob, "etcd3=paused")
	stopped := status{m: m[2]}
	l, _, prob = health([]status{st(0, l2, 3), st(1, l2, 3), stopped})
	require.Equal(t, m[1], l)
	require.Empty(t, prob)

	// A member that does not answer, and an alarm.
	d := status{m: m[2], running: true, err: errors.New("context deadline exceeded")}
	_, bad, _ = health([]status{st(0, l2, 3), st(1, l2, 3), d})
	require.Equal(t, []*Member{m[2]}, bad)
	a := st(2, l2, 3)
	a.errors = []string{"NOSPACE"}
	_, bad, prob = health([]status{st(0, l2, 3), st(1, l2, 3), a})
	require.Equal(t, []*Member{m[2]}, bad)
	require.Contains(t, prob, "etcd3 reports NOSPACE")

	// No leader at all (the old one is paused, no election yet).
	_, _, prob = health([]status{st(0, 0x13, 3), st(1, 0x13, 3), p})
	require.Contains(t, prob, "etcd3=paused")
	_, _, prob = health([]status{st(0, 0, 3), st(1, 0, 3), stopped})
	require.Contains(t, prob, "no leader")
	_, _, prob = health([]status{stopped})
	require.Equal(t, "no member running", prob)

	// leaderOf: the claimant, unless someone names another leader.
	ld, err := leaderOf([]status{st(0, l2, 3), st(1, l2, 3), p})
	require.NoError(t, err)
	require.Equal(t, m[1], ld)
	_, err = leaderOf([]status{st(0, 0x13, 3), st(1, 0x13, 3), p})
	require.ErrorContains(t, err, "no leader")
	_, err = leaderOf([]status{st(0, 0x13, 4), st(1, l2, 3), st(2, 0x13, 4)})
	require.ErrorContains(t, err, "2 leaders")
	_, err = leaderOf([]status{st(0, 0x13, 4), st(1, l2, 3), p})
	require.ErrorContains(t, err, "etcd2 says it leads but etcd1 names another leader")
}

// localTarget stands for a local-process member: a Target without the
// container capabilities.
type localTarget struct{}

func (localTarget) Name() string                  { return "etcd1" }
func (localTarget) Pause() error                  { return nil }
func (localTarget) Resume() error                 { return nil }
func (localTarget) Kill() error                   { return nil }
func (localTarget) Restart(context.Context) error { return nil }

func TestContainerFaultsAvailable(t *testing.T) {
	m := &Member{id: 1, name: "etcd1"}
	for _, name := range []string{"replace", "disconnect", "pause", "kill-restart"} {
		f, err := faults.New(name)
		require.NoError(t, err, name)
		require.NoError(t, f.Available(m), name)
	}
	require.NoError(t, (&faults.CPUThrottle{Cores: 0.5}).Available(m))
	require.Error(t, (&faults.Replace{}).Available(localTarget{}))
}

func TestLabelsOfMembers(t *testing.T) {
	l := docker.MergeLabels(docker.Labels("r"), map[string]string{docker.LabelComponent: Component, docker.LabelMember: MemberName(1)})
	require.Equal(t, map[string]string{
		"org.chaoslab.managed": "true", "org.chaoslab.run": "r", "org.chaoslab.owner": docker.Owner(),
		"org.chaoslab.component": "etcd", "org.chaoslab.member": "etcd1",
	}, l)
}
