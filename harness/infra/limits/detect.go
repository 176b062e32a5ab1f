package limits

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/cgroups/v3"
	"github.com/prometheus/procfs"
)

// Mode is the kind of cgroup support limits works with on this machine.
type Mode string

const (
	// ModeV1 uses the legacy (or hybrid) hierarchy: one mount per controller.
	ModeV1 Mode = "v1"
	// ModeV2 uses the unified hierarchy mounted at /sys/fs/cgroup.
	ModeV2 Mode = "v2"
	// ModeNone enforces nothing; see the package documentation.
	ModeNone Mode = "none"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	// baseName is the directory under each hierarchy holding one group per run.
	baseName = "chaoslab"
)

// layout is what detection found out about this machine.
type layout struct {
	mode   Mode
	reason string

	// v1: mount points of the controllers. memoryMount is always
	// cgroupRoot/memory (the cgroup1 library derives paths that way);
	// pidsMount is "" when the pids controller is not mounted.
	memoryMount string
	pidsMount   string
	// memoryRoot and pidsRoot are the mounts' roots within their hierarchy
	// ("/" unless a container bind-mounted a sub-tree), needed to turn the
	// paths of /proc/<pid>/cgroup into directories.
	memoryRoot string
	pidsRoot   string
	// cpuMount (cgroupRoot/cpu, "" when not mounted) and its root.
	cpuMount string
	cpuRoot  string

	// v2: the unified mount point and whether the pids controller is available.
	unified string
	v2Pids  bool
	v2CPU   bool
}

// baseDirs returns the chaoslab directories, one per hierarchy in use.
func (l layout) baseDirs() []string {
	switch l.mode {
	case ModeV1:
		d := []string{filepath.Join(l.memoryMount, baseName)}
		if l.pidsMount != "" {
			d = append(d, filepath.Join(l.pidsMount, baseName))
		}
		if l.cpuMount != "" {
			d = append(d, filepath.Join(l.cpuMount, baseName))
		}
		return d
	case ModeV2:
		return []string{filepath.Join(l.unified, baseName)}
	}
	return nil
}

// detectEnv is what detection reads from the machine, replaceable in tests.
type detectEnv struct {
	euid     int
	cgMode   func() cgroups.CGMode
	mounts   func() ([]*procfs.MountInfo, error)
	readFile func(string) ([]byte, error)
	// evalSymlinks resolves a path (for cgroupRoot/memory -> a co-mounted dir).
	evalSymlinks func(string) (string, error)
}

func hostEnv() detectEnv {
	return detectEnv{
		euid:         os.Geteuid(),
		cgMode:       cgroups.Mode,
		mounts:       procfs.GetMounts,
		readFile:     os.ReadFile,
		evalSymlinks: filepath.EvalSymlinks,
	}
}

// Detect reports which cgroup version limits can use here. The string
// explains the choice; for ModeNone it is the reason nothing can be enforced
// (not root, no cgroupfs, read-only cgroupfs, memory controller not enabled or
// not delegatable, ...).
func Detect() (Mode, string) {
	l := detectWith(hostEnv())
	return l.mode, l.reason
}

func none(format string, args ...any) layout {
	return layout{mode: ModeNone, reason: fmt.Sprintf(format, args...)}
}

func detectWith(env detectEnv) layout {
	if env.euid != 0 {
		return none("not root (euid %d): creating cgroups and moving processes needs root", env.euid)
	}
	mounts, err := env.mounts()
	if err != nil {
		return none("cannot read mount table: %v", err)
	}
	switch env.cgMode() {
	case cgroups.Unified:
		return detectV2(env, mounts)
	case cgroups.Legacy, cgroups.Hybrid:
		return detectV1(env, mounts)
	default:
		return none("no cgroup filesystem mounted at %s", cgroupRoot)
	}
}

func findMount(mounts []*procfs.MountInfo, match func(*procfs.MountInfo) bool) *procfs.MountInfo {
	// The last matching entry wins: later mounts hide earlier ones.
	var found *procfs.MountInfo
	for _, m := range mounts {
		if match(m) {
			found = m
		}
	}
	return found
}

func readOnly(m *procfs.MountInfo) bool {
	_, ro := m.Options["ro"]
	return ro
}

func detectV1(env detectEnv, mounts []*procfs.MountInfo) layout {
	memDir := filepath.Join(cgroupRoot, "memory")
	mem := findMount(mounts, func(m *procfs.MountInfo) bool {
		_, ok := m.SuperOptions["memory"]
		return m.FSType == "cgroup" && ok
	})
	if mem == nil {
		return none("cgroup v1: memory controller not mounted (disabled or not available)")
	}
	if mem.MountPoint != memDir {
		resolved, err := env.evalSymlinks(memDir)
		if err != nil || resolved != mem.MountPoint {
			return none("cgroup v1: memory controller mounted at %s, not reachable as %s", mem.MountPoint, memDir)
		}
	}
	if readOnly(mem) {
		return none("cgroup v1: %s is mounted read-only (unprivileged container?)", mem.MountPoint)
	}
	if _, err := env.readFile(filepath.Join(memDir, "memory.limit_in_bytes")); err != nil {
		return none("cgroup v1: %s has no usable memory controller: %v", memDir, err)
	}
	l := layout{mode: ModeV1, memoryMount: memDir, memoryRoot: mem.Root}
	notes := []string{"memory at " + memDir}
	l.pidsMount, l.pidsRoot = optionalV1(env, mounts, "pids")
	if l.pidsMount != "" {
		notes = append(notes, "pids at "+l.pidsMount)
	} else {
		notes = append(notes, "pids controller not mounted: pids limits are not enforced")
	}
	l.cpuMount, l.cpuRoot = optionalV1(env, mounts, "cpu")
	if l.cpuMount != "" {
		notes = append(notes, "cpu at "+l.cpuMount)
	} else {
		notes = append(notes, "cpu controller not mounted: CPU limits are not enforced")
	}
	l.reason = "cgroup v1: " + strings.Join(notes, ", ")
	return l
}

// optionalV1 finds a writable v1 mount of controller ctrl reachable as
// cgroupRoot/ctrl (the cgroup1 library derives paths that way), returning
// that path and the mount's root, or "" when there is none.
func optionalV1(env detectEnv, mounts []*procfs.MountInfo, ctrl string) (dir, root string) {
	m := findMount(mounts, func(m *procfs.MountInfo) bool {
		_, ok := m.SuperOptions[ctrl]
		return m.FSType == "cgroup" && ok
	})
	if m == nil || readOnly(m) {
		return "", ""
	}
	dir = filepath.Join(cgroupRoot, ctrl)
	if m.MountPoint == dir {
		return dir, m.Root
	}
	if r, err := env.evalSymlinks(dir); err == nil && r == m.MountPoint {
		return dir, m.Root
	}
	return "", ""
}

func detectV2(env detectEnv, mounts []*procfs.MountInfo) layout {
	m := findMount(mounts, func(m *procfs.MountInfo) bool {
		return m.FSType == "cgroup2" && m.MountPoint == cgroupRoot
	})
	if m == nil {
		return none("cgroup v2: no cgroup2 mount at %s in the mount table", cgroupRoot)
	}
	if readOnly(m) {
		return none("cgroup v2: %s is mounted read-only (unprivileged container?)", cgroupRoot)
	}
	b, err := env.readFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
	if err != nil {
		return none("cgroup v2: cannot read cgroup.controllers: %v", err)
	}
	controllers := strings.Fields(string(b))
	if !slices.Contains(controllers, "memory") {
		return none("cgroup v2: memory controller not delegated to %s (cgroup.controllers: %q)", cgroupRoot, strings.TrimSpace(string(b)))
	}
	l := layout{mode: ModeV2, unified: cgroupRoot,
		v2Pids: slices.Contains(controllers, "pids"), v2CPU: slices.Contains(controllers, "cpu")}
	// /sys/fs/cgroup is not the real root when it has a cgroup.type file
	// (cgroup namespace, container). Then the "no internal processes" rule
	// applies: controllers cannot be enabled for children while the group
	// itself holds processes.
	if _, err := env.readFile(filepath.Join(cgroupRoot, "cgroup.type")); err == nil {
		st, _ := env.readFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"))
		enabled := strings.Fields(string(st))
		procs, _ := env.readFile(filepath.Join(cgroupRoot, "cgroup.procs"))
		if !slices.Contains(enabled, "memory") && len(strings.TrimSpace(string(procs))) > 0 {
			return none("cgroup v2: %s is a non-root group that holds processes, so the memory controller cannot be enabled for child groups (no internal processes rule)", cgroupRoot)
		}
		busy := len(strings.TrimSpace(string(procs))) > 0
		l.v2Pids = l.v2Pids && (slices.Contains(enabled, "pids") || !busy)
		l.v2CPU = l.v2CPU && (slices.Contains(enabled, "cpu") || !busy)
	}
	notes := []string{"cgroup v2 at " + cgroupRoot}
	if !l.v2Pids {
		notes = append(notes, "pids controller not available: pids limits are not enforced")
	}
	if !l.v2CPU {
		notes = append(notes, "cpu controller not available: CPU limits are not enforced")
	}
	l.reason = strings.Join(notes, ", ")
	return l
}
