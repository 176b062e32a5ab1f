package kubernetes

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// containerMemoryDir is the memory cgroup of one container of the pod
// uid on this machine (v1: the memory hierarchy; v2: the unified one).
func containerMemoryDir(uid, containerID string) (dir string, v2, ok bool) {
	_, id, found := strings.Cut(containerID, "://")
	if !found || id == "" {
		return "", false, false
	}
	for _, c := range []struct {
		root string
		v2   bool
	}{{filepath.Join(cgroupFS, "memory"), false}, {cgroupFS, true}} {
		if dir, ok := findPodDir(c.root, uid, id); ok {
			return filepath.Join(dir, id), c.v2, true
		}
	}
	return "", false, false
}

// readStats reads a container's figures as the kernel counts them on
// this machine: its memory cgroup's charge and peak, and its processes'
// resident memory, threads and CPU time. ok is false where its node is
// not this machine.
func readStats(uid, containerID string) (lab.ProcStats, bool) {
	dir, v2, ok := containerMemoryDir(uid, containerID)
	if !ok {
		return lab.ProcStats{}, false
	}
	files := map[bool][3]string{
		false: {"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.limit_in_bytes"},
		true:  {"memory.current", "memory.peak", "memory.max"},
	}[v2]
	var st lab.ProcStats
	st.MemoryChargedBytes = readCgroupInt(filepath.Join(dir, files[0]))
	st.MemoryPeakBytes = readCgroupInt(filepath.Join(dir, files[1]))
	if lim := readCgroupInt(filepath.Join(dir, files[2])); lim > 0 && lim < 1<<60 {
		st.MemoryLimitBytes = lim
	}
	for _, pid := range containerPids(uid, containerID) {
		if ps, err := limits.ProcStats(pid); err == nil {
			st.RSSBytes += ps.RSSBytes
			st.Threads += ps.Threads
			st.CPUSeconds += ps.CPUSeconds
		}
	}
	return st, true
}

// readCgroupInt reads a cgroup file of one number (0: none, "max").
func readCgroupInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
