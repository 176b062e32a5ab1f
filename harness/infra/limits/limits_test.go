package limits

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/prometheus/procfs"
	"github.com/stretchr/testify/require"
)

func TestParseOOMControl(t *testing.T) {
	c, err := parseOOMControl("oom_kill_disable 0\nunder_oom 1\noom_kill 3\n")
	require.NoError(t, err)
	require.Equal(t, OOMControl{UnderOOM: true, OOMKill: 3, HasOOMKill: true}, c)

	// Kernels before 4.13 have no oom_kill line.
	c, err = parseOOMControl("oom_kill_disable 1\nunder_oom 0\n")
	require.NoError(t, err)
	require.Equal(t, OOMControl{OOMKillDisable: true}, c)

	_, err = parseOOMControl("oom_kill_disable 0\nunder_oom yes\n")
	require.Error(t, err)
	_, err = parseOOMControl("")
	require.Error(t, err, "an empty file is not a memory.oom_control")
	_, err = parseOOMControl("a b c\n")
	require.Error(t, err)
}

func TestParseMemoryEvents(t *testing.T) {
	ev, err := parseMemoryEvents("low 0\nhigh 12\nmax 40\noom 2\noom_kill 1\noom_group_kill 0\n")
	require.NoError(t, err)
	require.Equal(t, MemoryEvents{High: 12, Max: 40, OOM: 2, OOMKill: 1}, ev)

	// Older kernels: no oom_group_kill (5.17) and maybe no oom_kill (4.13).
	ev, err = parseMemoryEvents("low 0\nhigh 0\nmax 0\noom 0\n")
	require.NoError(t, err)
	require.Equal(t, MemoryEvents{}, ev)

	_, err = parseMemoryEvents("low 0\nhigh 0\n")
	require.Error(t, err)
	_, err = parseMemoryEvents("oom -1\n")
	require.Error(t, err)
}

func TestParseFlatKeyed(t *testing.T) {
	kv, err := parseFlatKeyed("max 7\n\nfoo max\n")
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{"max": 7, "foo": math.MaxUint64}, kv)
}

func TestParseLimitAndCount(t *testing.T) {
	for in, want := range map[string]int64{
		"max\n":                 0,
		"9223372036854771712\n": 0, // v1 "unlimited"
		"33554432\n":            32 << 20,
		"20":                    20,
	} {
		got, err := parseLimit(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseLimit("lots")
	require.Error(t, err)

	n, err := parseCount(" 1234\n")
	require.NoError(t, err)
	require.EqualValues(t, 1234, n)
	_, err = parseCount("")
	require.Error(t, err)
}

func TestParsePids(t *testing.T) {
	p, err := parsePids("12\n345\n")
	require.NoError(t, err)
	require.Equal(t, []int{12, 345}, p)
	p, err = parsePids("")
	require.NoError(t, err)
	require.Empty(t, p)
	_, err = parsePids("12\nx\n")
	require.Error(t, err)
}

func TestParseKernelVersion(t *testing.T) {
	for in, want := range map[string][2]int{
		"6.18.44-fc-v769": {6, 18},
		"5.7.0":           {5, 7},
		"4.19.0-26-amd64": {4, 19},
	} {
		ma, mi, ok := parseKernelVersion(in)
		require.True(t, ok, in)
		require.Equal(t, want, [2]int{ma, mi}, in)
	}
	_, _, ok := parseKernelVersion("garbage")
	require.False(t, ok)
}

func TestKernelLogParsing(t *testing.T) {
	r, ok := parseKmsgRecord("3,1234,5678901,-;Memory cgroup out of memory: Killed process 4242 (oomer) total-vm:1234kB, anon-rss:32000kB\n SUBSYSTEM=x\n")
	require.True(t, ok)
	require.Equal(t, 5678901*time.Microsecond, r.At)
	require.Equal(t, "Memory cgroup out of memory: Killed process 4242 (oomer) total-vm:1234kB, anon-rss:32000kB", r.Msg)
	_, ok = parseKmsgRecord("no header")
	require.False(t, ok)

	recs := parseDmesg("[    1.304439] random: crng reseeded\n" +
		"[   12.500000] Out of memory: Killed process 1234 (a) total-vm:1kB\n" +
		"[  100.000001] Memory cgroup out of memory: Killed process 123 (b) total-vm:1kB\n" +
		"continuation without a timestamp\n")
	require.Len(t, recs, 4)
	require.Equal(t, 12*time.Second+500*time.Millisecond, recs[1].At)
	require.EqualValues(t, -1, recs[3].At)

	line, ok := findOOMKill(recs, 123, -1)
	require.True(t, ok, "pid 123 must not be confused with 1234")
	require.Contains(t, line, "Killed process 123 (b)")
	line, ok = findOOMKill(recs, 1234, -1)
	require.True(t, ok)
	require.Contains(t, line, "Killed process 1234 (a)")
	_, ok = findOOMKill(recs, 1234, 50*time.Second)
	require.False(t, ok, "a kill logged before since does not count")
	_, ok = findOOMKill(recs, 12, -1)
	require.False(t, ok)
}

func TestValidName(t *testing.T) {
	require.NoError(t, validName("run-2024.01_x"))
	for _, bad := range []string{"", ".", "..", "a/b", "-x", "../x", "a b", string(make([]byte, 200))} {
		require.Error(t, validName(bad), "%q", bad)
	}
}

// fakeEnv builds a detectEnv from a mount table and file contents.
func fakeEnv(euid int, mode cgroups.CGMode, mounts []*procfs.MountInfo, files map[string]string) detectEnv {
	return detectEnv{
		euid:   euid,
		cgMode: func() cgroups.CGMode { return mode },
		mounts: func() ([]*procfs.MountInfo, error) { return mounts, nil },
		readFile: func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, os.ErrNotExist
		},
		evalSymlinks: func(p string) (string, error) { return p, nil },
	}
}

func v1Mount(point, ctrl string, ro bool) *procfs.MountInfo {
	opts := map[string]string{"rw": ""}
	if ro {
		opts = map[string]string{"ro": ""}
	}
	return &procfs.MountInfo{MountPoint: point, FSType: "cgroup", Root: "/", Options: opts,
		SuperOptions: map[string]string{"rw": "", ctrl: ""}}
}

func v2Mount(ro bool) *procfs.MountInfo {
	opts := map[string]string{"rw": ""}
	if ro {
		opts = map[string]string{"ro": ""}
	}
	return &procfs.MountInfo{MountPoint: "/sys/fs/cgroup", FSType: "cgroup2", Root: "/", Options: opts}
}

func TestDetectWith(t *testing.T) {
	v1Files := map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}
	v1Mounts := []*procfs.MountInfo{v1Mount("/sys/fs/cgroup/memory", "memory", false), v1Mount("/sys/fs/cgroup/pids", "pids", false)}

	l := detectWith(fakeEnv(1000, cgroups.Legacy, v1Mounts, v1Files))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "not root")

	l = detectWith(fakeEnv(0, cgroups.Unavailable, nil, nil))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "no cgroup filesystem")

	l = detectWith(fakeEnv(0, cgroups.Legacy, v1Mounts, v1Files))
	require.Equal(t, ModeV1, l.mode, l.reason)
	require.Equal(t, "/sys/fs/cgroup/memory", l.memoryMount)
	require.Equal(t, "/sys/fs/cgroup/pids", l.pidsMount)
	require.Equal(t, []string{"/sys/fs/cgroup/memory/chaoslab", "/sys/fs/cgroup/pids/chaoslab"}, l.baseDirs())

	l = detectWith(fakeEnv(0, cgroups.Hybrid, v1Mounts[:1], v1Files))
	require.Equal(t, ModeV1, l.mode, l.reason)
	require.Empty(t, l.pidsMount)
	require.Contains(t, l.reason, "pids limits are not enforced")

	l = detectWith(fakeEnv(0, cgroups.Legacy, []*procfs.MountInfo{v1Mount("/sys/fs/cgroup/memory", "memory", true)}, v1Files))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "read-only")

	l = detectWith(fakeEnv(0, cgroups.Legacy, v1Mounts[1:], v1Files))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "memory controller not mounted")

	v2Files := map[string]string{"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n"}
	l = detectWith(fakeEnv(0, cgroups.Unified, []*procfs.MountInfo{v2Mount(false)}, v2Files))
	require.Equal(t, ModeV2, l.mode, l.reason)
	require.True(t, l.v2Pids)
	require.Equal(t, []string{"/sys/fs/cgroup/chaoslab"}, l.baseDirs())

	l = detectWith(fakeEnv(0, cgroups.Unified, []*procfs.MountInfo{v2Mount(true)}, v2Files))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "read-only")

	l = detectWith(fakeEnv(0, cgroups.Unified, []*procfs.MountInfo{v2Mount(false)},
		map[string]string{"/sys/fs/cgroup/cgroup.controllers": "cpu io pids\n"}))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "memory controller not delegated")

	// A cgroup namespace root (has cgroup.type) holding processes, memory not yet enabled.
	nsFiles := map[string]string{
		"/sys/fs/cgroup/cgroup.controllers":     "cpu memory pids\n",
		"/sys/fs/cgroup/cgroup.type":            "domain\n",
		"/sys/fs/cgroup/cgroup.subtree_control": "\n",
		"/sys/fs/cgroup/cgroup.procs":           "1\n57\n",
	}
	l = detectWith(fakeEnv(0, cgroups.Unified, []*procfs.MountInfo{v2Mount(false)}, nsFiles))
	require.Equal(t, ModeNone, l.mode)
	require.Contains(t, l.reason, "no internal processes")

	// Same, but memory is already enabled for children: usable.
	nsFiles["/sys/fs/cgroup/cgroup.subtree_control"] = "memory pids\n"
	l = detectWith(fakeEnv(0, cgroups.Unified, []*procfs.MountInfo{v2Mount(false)}, nsFiles))
	require.Equal(t, ModeV2, l.mode, l.reason)
}

func TestDetect(t *testing.T) {
	mode, reason := Detect()
	t.Logf("Detect: %s: %s", mode, reason)
	require.NotEmpty(t, reason)
	require.Contains(t, []Mode{ModeV1, ModeV2, ModeNone}, mode)
	if os.Geteuid() != 0 {
		require.Equal(t, ModeNone, mode)
	}
}

// TestModeNone checks the no-enforcement path everywhere (no root needed).
func TestModeNone(t *testing.T) {
	m := &Manager{runID: "none-test", logger: discardLogger(), names: map[string]bool{}}
	m.toNone("test: forced")
	require.Equal(t, ModeNone, m.Mode())
	require.Equal(t, "test: forced", m.Reason())
	require.Empty(t, m.Path())

	g, err := m.NewGroup("client-0", Limits{MemoryBytes: 32 << 20, PidsMax: 20})
	require.NoError(t, err)
	require.Empty(t, g.Path())
	_, err = m.NewGroup("client-0", Limits{})
	require.Error(t, err, "duplicate group name")

	cmd := exec.Command("sleep", "30")
	require.NoError(t, g.Start(cmd))
	require.True(t, g.Contains(cmd.Process.Pid))

	var st Stats
	require.Eventually(t, func() bool {
		st, err = g.Stats()
		require.NoError(t, err)
		return st.MemoryBytes > 0 // RSS from /proc, once the new image has touched pages
	}, 5*time.Second, 10*time.Millisecond)
	require.False(t, st.Enforced)
	require.Zero(t, st.OOMKills)
	require.EqualValues(t, 1, st.Pids)

	require.NoError(t, g.Delete())
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "%v", err)
	ws := ee.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled())
	require.Equal(t, syscall.SIGKILL, ws.Signal())
	require.False(t, g.Contains(cmd.Process.Pid))
	require.NoError(t, g.Delete())
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	_, err = m.NewGroup("late", Limits{})
	require.Error(t, err)
}

func TestProcStatsSelf(t *testing.T) {
	ps, err := ProcStats(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, ps.RSSBytes)
	require.GreaterOrEqual(t, ps.PeakRSSBytes, ps.RSSBytes)
	require.GreaterOrEqual(t, ps.Threads, 1)
	require.GreaterOrEqual(t, ps.CPUSeconds, 0.0)
	_, err = ProcStats(-5)
	require.Error(t, err)
}

func TestNewManagerRejectsBadRunID(t *testing.T) {
	_, err := NewManager("../etc", nil)
	require.Error(t, err)
}

func TestParseProcCgroup(t *testing.T) {
	cg, err := parseProcCgroup("9:name=systemd:/\n4:memory:/process_api/c20a\n2:cpu,cpuacct:/x\n0::/\n")
	require.NoError(t, err)
	require.Equal(t, "/process_api/c20a", cg["memory"])
	require.Equal(t, "/x", cg["cpu"])
	require.Equal(t, "/x", cg["cpuacct"])
	require.Equal(t, "/", cg[""])
	_, err = parseProcCgroup("garbage\n")
	require.Error(t, err)

	d, err := cgroupDir("/sys/fs/cgroup/memory", "/", "/a/b")
	require.NoError(t, err)
	require.Equal(t, "/sys/fs/cgroup/memory/a/b", d)
	d, err = cgroupDir("/sys/fs/cgroup/memory", "/docker/abc", "/docker/abc/x")
	require.NoError(t, err)
	require.Equal(t, "/sys/fs/cgroup/memory/x", d)
	_, err = cgroupDir("/sys/fs/cgroup/memory", "/docker/abc", "/other")
	require.Error(t, err)
}

func TestCPULimitParsing(t *testing.T) {
	for in, want := range map[string]float64{"max 100000\n": 0, "20000 100000\n": 0.2, "150000 100000": 1.5, "50000": 0.5} {
		got, err := parseCPUMax(in)
		require.NoError(t, err, in)
		require.InDelta(t, want, got, 1e-9, in)
	}
	for _, bad := range []string{"", "x 100000", "1 2 3", "1000 0"} {
		_, err := parseCPUMax(bad)
		require.Error(t, err, "%q", bad)
	}
	require.EqualValues(t, 20000, cpuQuotaUS(0.2))
	require.EqualValues(t, 150000, cpuQuotaUS(1.5))
	require.EqualValues(t, 1000, cpuQuotaUS(0.001), "kernel minimum quota")
}

func TestDetectWithCPU(t *testing.T) {
	files := map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}
	mounts := []*procfs.MountInfo{v1Mount("/sys/fs/cgroup/memory", "memory", false), v1Mount("/sys/fs/cgroup/cpu", "cpu", false)}
	l := detectWith(fakeEnv(0, cgroups.Legacy, mounts, files))
	require.Equal(t, ModeV1, l.mode, l.reason)
	require.Equal(t, "/sys/fs/cgroup/cpu", l.cpuMount)
	require.Equal(t, []string{"/sys/fs/cgroup/memory/chaoslab", "/sys/fs/cgroup/cpu/chaoslab"}, l.baseDirs())

	// cpu co-mounted with cpuacct and reached through the usual symlink.
	co := v1Mount("/sys/fs/cgroup/cpu,cpuacct", "cpu", false)
	co.SuperOptions["cpuacct"] = ""
	env := fakeEnv(0, cgroups.Legacy, []*procfs.MountInfo{mounts[0], co}, files)
	env.evalSymlinks = func(p string) (string, error) {
		if p == "/sys/fs/cgroup/cpu" {
			return "/sys/fs/cgroup/cpu,cpuacct", nil
		}
		return p, nil
	}
	l = detectWith(env)
	require.Equal(t, "/sys/fs/cgroup/cpu", l.cpuMount)

	// cpuacct alone is not cpu.
	l = detectWith(fakeEnv(0, cgroups.Legacy, []*procfs.MountInfo{mounts[0], v1Mount("/sys/fs/cgroup/cpuacct", "cpuacct", false)}, files))
	require.Empty(t, l.cpuMount)
	require.Contains(t, l.reason, "CPU limits are not enforced")

	v2 := map[string]string{"/sys/fs/cgroup/cgroup.controllers": "memory pids\n"}
	l = detectWith(fakeEnv(0, cgroups.Unified, []*procfs.MountInfo{v2Mount(false)}, v2))
	require.Equal(t, ModeV2, l.mode)
	require.False(t, l.v2CPU)
	require.Contains(t, l.reason, "CPU limits are not enforced")
}
