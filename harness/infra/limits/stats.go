package limits

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Stats are a group's figures as the kernel counts them.
type Stats struct {
	Mode Mode
	// Enforced is true when a kernel cgroup accounts and limits the group;
	// false in ModeNone, where the limits were NOT enforced and every OOM
	// figure below is zero (not evidence of anything).
	Enforced bool
	// PidsEnforced is true when the pids controller accounts the group.
	PidsEnforced bool

	// MemoryBytes is the current usage: v1 memory.usage_in_bytes, v2
	// memory.current; in ModeNone the summed RSS of the remembered processes.
	MemoryBytes int64
	// MemoryMaxBytes is the peak usage: v1 memory.max_usage_in_bytes, v2
	// memory.peak (Linux >= 5.19; 0 when absent); in ModeNone the summed
	// VmHWM of the remembered live processes.
	MemoryMaxBytes int64
	// MemoryLimitBytes is the limit in force as read back (0 = none).
	MemoryLimitBytes int64

	// OOMKills counts processes of the group killed by the kernel OOM
	// killer: v1 memory.oom_control oom_kill, v2 memory.events oom_kill.
	OOMKills uint64
	// OOMEvents counts times the group ran out of memory: v2 memory.events
	// oom; v1 notifications on the memory.oom_control eventfd since the
	// group was created (OOMKills when no eventfd could be registered).
	OOMEvents uint64
	// UnderOOM is v1's under_oom: the group is out of memory right now.
	UnderOOM bool
	// FailCnt counts charges refused at the limit: v1 memory.failcnt, v2
	// memory.events max.
	FailCnt uint64

	// Pids is the number of tasks (processes and threads): pids.current
	// (counts zombies not yet reaped); without the pids controller the
	// number of threads listed in the group.
	Pids int64
	// PidsMax is the pids limit in force (0 = none).
	PidsMax int64
	// PidsLimitHits counts forks and clones refused by pids.max (pids.events max).
	PidsLimitHits uint64

	// CPUEnforced is true when the group has a CPU limit the cpu controller enforces.
	CPUEnforced bool
	// CPUCores is the CPU limit in force, in cores (0 = none).
	CPUCores float64
	// CPUThrottledPeriods and CPUThrottledSeconds (cpu.stat nr_throttled,
	// v1 throttled_time, v2 throttled_usec) say how often and how long the
	// group was held back by its CPU limit.
	CPUThrottledPeriods uint64
	CPUThrottledSeconds float64
}

// Stats reads the group's counters. After Delete it returns the counters
// read just before the group was removed.
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted && g.final != nil {
		return *g.final, nil
	}
	if g.deleted {
		return Stats{Mode: g.mode}, fmt.Errorf("limits: group %q is deleted", g.name)
	}
	if g.mode == ModeNone {
		return g.noneStatsLocked(), nil
	}
	return g.readStatsLocked()
}

func readString(dir, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	return string(b), err
}

// statReader collects the errors of required files.
type statReader struct {
	dir  string
	errs []error
}

func (r *statReader) str(file string, optional bool) (string, bool) {
	s, err := readString(r.dir, file)
	if err != nil {
		if !(optional && errors.Is(err, fs.ErrNotExist)) {
			r.errs = append(r.errs, err)
		}
		return "", false
	}
	return s, true
}

func (r *statReader) count(file string, optional bool) int64 {
	s, ok := r.str(file, optional)
	if !ok {
		return 0
	}
	v, err := parseCount(s)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", file, err))
	}
	return v
}

func (r *statReader) limit(file string) int64 {
	s, ok := r.str(file, false)
	if !ok {
		return 0
	}
	v, err := parseLimit(s)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", file, err))
	}
	return v
}

func (r *statReader) keyed(file string, optional bool) map[string]uint64 {
	s, ok := r.str(file, optional)
	if !ok {
		return nil
	}
	kv, err := parseFlatKeyed(s)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", file, err))
	}
	return kv
}

func (g *Group) readStatsLocked() (Stats, error) {
	st := Stats{Mode: g.mode, Enforced: true, PidsEnforced: g.pidsEnforced}
	var errs []error
	var pidsDir string
	switch g.mode {
	case ModeV1:
		r := &statReader{dir: g.memDir}
		st.MemoryBytes = r.count("memory.usage_in_bytes", false)
		st.MemoryMaxBytes = r.count("memory.max_usage_in_bytes", false)
		st.MemoryLimitBytes = r.limit("memory.limit_in_bytes")
		st.FailCnt = uint64(r.count("memory.failcnt", false))
		if s, ok := r.str("memory.oom_control", false); ok {
			c, err := parseOOMControl(s)
			if err != nil {
				r.errs = append(r.errs, err)
			}
			st.OOMKills, st.UnderOOM = c.OOMKill, c.UnderOOM
		}
		g.drainOOMEventFD()
		st.OOMEvents = g.oomEvents
		if g.oomFD < 0 && st.OOMKills > st.OOMEvents {
			st.OOMEvents = st.OOMKills
		}
		errs = append(errs, r.errs...)
		pidsDir = g.pidsDir
		if pidsDir == "" {
			st.Pids = countTasks(g.memDir, "tasks")
		}
	case ModeV2:
		r := &statReader{dir: g.dir}
		st.MemoryBytes = r.count("memory.current", false)
		st.MemoryMaxBytes = r.count("memory.peak", true)
		st.MemoryLimitBytes = r.limit("memory.max")
		if s, ok := r.str("memory.events", false); ok {
			ev, err := parseMemoryEvents(s)
			if err != nil {
				r.errs = append(r.errs, err)
			}
			st.OOMKills, st.OOMEvents, st.FailCnt = ev.OOMKill, ev.OOM, ev.Max
		}
		errs = append(errs, r.errs...)
		if g.pidsEnforced {
			pidsDir = g.dir
		} else {
			st.Pids = countTasks(g.dir, "cgroup.threads")
		}
	}
	if g.cpuEnforced {
		errs = append(errs, g.readCPUStats(&st)...)
	}
	if pidsDir != "" {
		r := &statReader{dir: pidsDir}
		st.Pids = r.count("pids.current", false)
		st.PidsMax = r.limit("pids.max")
		if kv := r.keyed("pids.events", true); kv != nil {
			st.PidsLimitHits = kv["max"]
		}
		errs = append(errs, r.errs...)
	}
	if len(errs) > 0 {
		return st, fmt.Errorf("limits: reading stats of %s: %w", g.Path(), errors.Join(errs...))
	}
	return st, nil
}

func (g *Group) readCPUStats(st *Stats) []error {
	st.CPUEnforced = true
	if g.mode == ModeV1 {
		r := &statReader{dir: g.cpuDir}
		quota := r.count("cpu.cfs_quota_us", false)
		period := r.count("cpu.cfs_period_us", false)
		if quota > 0 && period > 0 {
			st.CPUCores = float64(quota) / float64(period)
		}
		if kv := r.keyed("cpu.stat", false); kv != nil {
			st.CPUThrottledPeriods = kv["nr_throttled"]
			st.CPUThrottledSeconds = float64(kv["throttled_time"]) / 1e9
		}
		return r.errs
	}
	r := &statReader{dir: g.dir}
	if s, ok := r.str("cpu.max", false); ok {
		c, err := parseCPUMax(s)
		if err != nil {
			r.errs = append(r.errs, err)
		}
		st.CPUCores = c
	}
	if kv := r.keyed("cpu.stat", false); kv != nil {
		st.CPUThrottledPeriods = kv["nr_throttled"]
		st.CPUThrottledSeconds = float64(kv["throttled_usec"]) / 1e6
	}
	return r.errs
}

func countTasks(dir, file string) int64 {
	s, err := readString(dir, file)
	if err != nil {
		return 0
	}
	return int64(len(strings.Fields(s)))
}

// drainOOMEventFD adds what the v1 OOM eventfd counted since the last read.
func (g *Group) drainOOMEventFD() {
	if g.oomFD < 0 {
		return
	}
	var buf [8]byte
	for {
		n, err := unix.Read(g.oomFD, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n != 8 {
			return // EAGAIN: nothing new
		}
		g.oomEvents += binary.NativeEndian.Uint64(buf[:])
	}
}

// noneStatsLocked sums /proc figures of the remembered live processes.
func (g *Group) noneStatsLocked() Stats {
	st := Stats{Mode: ModeNone}
	for _, p := range g.tracked {
		if p.Signal(unix.Signal(0)) != nil {
			continue
		}
		ps, err := ProcStats(p.Pid)
		if err != nil {
			continue
		}
		st.MemoryBytes += ps.RSSBytes
		st.MemoryMaxBytes += ps.PeakRSSBytes
		st.Pids += int64(ps.Threads)
	}
	return st
}
