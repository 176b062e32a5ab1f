package limits

import (
	"bufio"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// OOMControl is the content of a cgroup v1 memory.oom_control file.
type OOMControl struct {
	OOMKillDisable bool
	UnderOOM       bool
	// OOMKill counts processes killed by the OOM killer in this group
	// (kernel >= 4.13; HasOOMKill is false on older kernels).
	OOMKill    uint64
	HasOOMKill bool
}

// MemoryEvents is the content of a cgroup v2 memory.events file.
type MemoryEvents struct {
	Low          uint64
	High         uint64
	Max          uint64 // usage was about to go over memory.max
	OOM          uint64 // the group hit its limit and the OOM killer was invoked
	OOMKill      uint64 // processes killed by the OOM killer
	OOMGroupKill uint64
}

// parseFlatKeyed parses "key value" lines (memory.oom_control,
// memory.events, pids.events, memory.stat ...). Values must be unsigned
// integers; "max" is read as math.MaxUint64.
func parseFlatKeyed(s string) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(strings.NewReader(s))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"key value\", got %q", line, text)
		}
		if f[1] == "max" {
			out[f[0]] = math.MaxUint64
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: %w", line, text, err)
		}
		out[f[0]] = v
	}
	return out, sc.Err()
}

// parseOOMControl parses a cgroup v1 memory.oom_control file.
func parseOOMControl(s string) (OOMControl, error) {
	kv, err := parseFlatKeyed(s)
	if err != nil {
		return OOMControl{}, fmt.Errorf("memory.oom_control: %w", err)
	}
	if _, ok := kv["under_oom"]; !ok {
		return OOMControl{}, fmt.Errorf("memory.oom_control: no under_oom line in %q", s)
	}
	c := OOMControl{
		OOMKillDisable: kv["oom_kill_disable"] != 0,
		UnderOOM:       kv["under_oom"] != 0,
	}
	c.OOMKill, c.HasOOMKill = kv["oom_kill"]
	return c, nil
}

// parseMemoryEvents parses a cgroup v2 memory.events (or memory.events.local) file.
func parseMemoryEvents(s string) (MemoryEvents, error) {
	kv, err := parseFlatKeyed(s)
	if err != nil {
		return MemoryEvents{}, fmt.Errorf("memory.events: %w", err)
	}
	if _, ok := kv["oom"]; !ok {
		return MemoryEvents{}, fmt.Errorf("memory.events: no oom line in %q", s)
	}
	return MemoryEvents{
		Low:          kv["low"],
		High:         kv["high"],
		Max:          kv["max"],
		OOM:          kv["oom"],
		OOMKill:      kv["oom_kill"],
		OOMGroupKill: kv["oom_group_kill"],
	}, nil
}

// unlimitedV1 is the smallest value treated as "no limit" in v1 files: the
// kernel reports PAGE_COUNTER_MAX*PAGE_SIZE (9223372036854771712 on x86-64).
const unlimitedV1 = int64(1) << 62

// parseLimit parses a limit file (memory.max, pids.max,
// memory.limit_in_bytes): "max" or a v1 "unlimited" figure give 0.
func parseLimit(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("limit %q: %w", s, err)
	}
	if v >= uint64(unlimitedV1) {
		return 0, nil
	}
	return int64(v), nil
}

// parseCount parses a single non-negative integer (memory.current, pids.current ...).
func parseCount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("count %q: %w", s, err)
	}
	return v, nil
}

// parsePids parses a cgroup.procs file.
func parsePids(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Fields(s) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("cgroup.procs: %q: %w", f, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseProcCgroup parses /proc/<pid>/cgroup ("4:memory:/a/b", "0::/a" for
// v2) into controller -> path; the v2 entry is under "".
func parseProcCgroup(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("/proc/*/cgroup: bad line %q", line)
		}
		if f[1] == "" {
			out[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out, nil
}

// cgroupDir turns a /proc/<pid>/cgroup path into a directory under a mount
// whose root within the hierarchy is root.
func cgroupDir(mount, root, path string) (string, error) {
	if root == "" || root == "/" {
		return filepath.Join(mount, path), nil
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("cgroup %s is outside the mount root %s", path, root)
	}
	return filepath.Join(mount, rel), nil
}

// parseCPUMax parses a cgroup v2 cpu.max ("max 100000", "20000 100000")
// into cores (0 = no limit).
func parseCPUMax(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) < 1 || len(f) > 2 {
		return 0, fmt.Errorf("cpu.max: bad content %q", s)
	}
	if f[0] == "max" {
		return 0, nil
	}
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpu.max: %q: %w", s, err)
	}
	period := int64(cpuPeriodUS)
	if len(f) == 2 {
		if period, err = strconv.ParseInt(f[1], 10, 64); err != nil || period <= 0 {
			return 0, fmt.Errorf("cpu.max: bad period in %q", s)
		}
	}
	return float64(quota) / float64(period), nil
}
