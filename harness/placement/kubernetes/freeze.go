package kubernetes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	pod := "pod" + uid
	for _, c := range []struct {
		root string
		v2   bool
	}{{filepath.Join(cgroupFS, "freezer"), false}, {cgroupFS, true}} {
		for _, pat := range []string{"kubepods*/%s", "kubepods*/*/%s", "*/kubepods*/%s", "*/kubepods*/*/%s"} {
			m, _ := filepath.Glob(filepath.Join(c.root, fmt.Sprintf(pat, pod)))
			if len(m) == 0 {
				continue
			}
			f := &freezer{dir: m[0], v2: c.v2}
			if _, err := os.Stat(f.control()); err == nil {
				return f, nil
			}
		}
	}
	return nil, fmt.Errorf("the cgroup of pod %s is not on this machine: a pause freezes the pod's cgroup, so its node must be this machine (the test cluster)", uid)
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
