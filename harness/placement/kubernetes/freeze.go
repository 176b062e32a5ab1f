package kubernetes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupFS is where this machine mounts its cgroups.
var cgroupFS = "/sys/fs/cgroup"

// freezer is a pod's cgroup on this machine, frozen and thawed as a
// whole: a pause as the container placement's (the engine freezes the
// container's cgroup), the pod's processes keeping their sockets. It
// exists only where the pod's node is this machine (the test cluster):
// elsewhere the kubelet's cgroups are not reachable from here.
type freezer struct {
	dir string // the pod's cgroup in the freezer hierarchy (v1) or the unified one (v2)
	v2  bool
}

// podFreezer finds the cgroup of the pod uid, made by a kubelet with
// the cgroupfs driver (kubepods/<qos>/pod<uid>, under its cgroupRoot).
func podFreezer(uid string) (*freezer, error) {
	dir, v2, ok := podCgroup(uid)
	if !ok {
		return nil, fmt.Errorf("the cgroup of pod %s is not on this machine: a pause freezes the pod's cgroup, so its node must be this machine (the test cluster)", uid)
	}
	return &freezer{dir: dir, v2: v2}, nil
}

// podCgroup is the pod's cgroup on this machine: in the freezer
// hierarchy (v1) or the unified one (v2).
func podCgroup(uid string) (dir string, v2, ok bool) {
	for _, c := range []struct {
		root, control string
		v2            bool
	}{{filepath.Join(cgroupFS, "freezer"), "freezer.state", false}, {cgroupFS, "cgroup.freeze", true}} {
		if dir, ok := findPodDir(c.root, uid, c.control); ok {
			return dir, c.v2, true
		}
	}
	return "", false, false
}

// findPodDir is the cgroup of the pod uid under one hierarchy's root,
// made by a kubelet with the cgroupfs driver (kubepods/<qos>/pod<uid>,
// under its cgroupRoot), joined with sub, which must exist.
func findPodDir(root, uid, sub string) (string, bool) {
	for _, pat := range []string{"kubepods*/%s", "kubepods*/*/%s", "*/kubepods*/%s", "*/kubepods*/*/%s"} {
		m, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf(pat, "pod"+uid)))
		if len(m) == 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(m[0], sub)); err == nil {
			return m[0], true
		}
	}
	return "", false
}

// podPids are the processes of the pod uid, from its cgroup and its
// containers' (none when the pod's node is not this machine).
func podPids(uid string) []int {
	dir, _, ok := podCgroup(uid)
	if !ok {
		return nil
	}
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
		return nil
	})
	return pids
}

func (f *freezer) control() string {
	if f.v2 {
		return filepath.Join(f.dir, "cgroup.freeze")
	}
	return filepath.Join(f.dir, "freezer.state")
}

// set freezes (true) or thaws the pod.
func (f *freezer) set(frozen bool) error {
	v := map[bool]string{true: "FROZEN", false: "THAWED"}[frozen]
	if f.v2 {
		v = map[bool]string{true: "1", false: "0"}[frozen]
	}
	if err := os.WriteFile(f.control(), []byte(v), 0); err != nil {
		return fmt.Errorf("write %s: %w", f.control(), err)
	}
	return nil
}

// frozen reads back whether the kernel has the pod frozen (v1: FROZEN,
// not FREEZING; v2: cgroup.events says frozen 1).
func (f *freezer) frozen() (bool, error) {
	if f.v2 {
		b, err := os.ReadFile(filepath.Join(f.dir, "cgroup.events"))
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, " "); ok && k == "frozen" {
				return v == "1", nil
			}
		}
		return false, errors.New("cgroup.events has no frozen line")
	}
	b, err := os.ReadFile(f.control())
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(b)) == "FROZEN", nil
}

// containerPids are the processes of one container of the pod uid (its
// runtime id, "containerd://ID"), from its cgroup on this machine.
func containerPids(uid, containerID string) []int {
	dir, _, ok := podCgroup(uid)
	_, id, found := strings.Cut(containerID, "://")
	if !ok || !found || id == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, id, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}
