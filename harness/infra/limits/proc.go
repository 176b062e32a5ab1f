package limits

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// ProcStat are one process's figures from /proc.
type ProcStat struct {
	PID int
	// RSSBytes is the resident set size (/proc/<pid>/stat rss).
	RSSBytes int64
	// PeakRSSBytes is the peak resident set size (/proc/<pid>/status VmHWM; 0 if unreadable).
	PeakRSSBytes int64
	// Threads is the number of threads.
	Threads int
	// CPUSeconds is user+system CPU time.
	CPUSeconds float64
}

// ProcStats reads a process's RSS, peak RSS, thread count and CPU time.
func ProcStats(pid int) (ProcStat, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ProcStat{}, fmt.Errorf("limits: /proc/%d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return ProcStat{}, fmt.Errorf("limits: /proc/%d/stat: %w", pid, err)
	}
	out := ProcStat{
		PID:        pid,
		RSSBytes:   int64(st.ResidentMemory()),
		Threads:    st.NumThreads,
		CPUSeconds: st.CPUTime(),
	}
	if status, err := p.NewStatus(); err == nil {
		out.PeakRSSBytes = int64(status.VmHWM)
	}
	// The two files are read at different moments from approximate
	// counters; a peak below the current figure is read as the current one.
	out.PeakRSSBytes = max(out.PeakRSSBytes, out.RSSBytes)
	return out, nil
}

// kernelLogTimeout bounds KernelOOMKilled.
const kernelLogTimeout = 3 * time.Second

// KernelOOMKilled looks in the kernel log for the OOM killer's line about
// pid ("Out of memory: Killed process <pid> (...)", "Memory cgroup out of
// memory: Killed process <pid> (...)"), logged at or after since (zero: any
// time). It reads /dev/kmsg without blocking, else runs dmesg, within a few
// seconds. It returns the line found, or false and why not — "kernel log
// unavailable: ..." when neither can be read. It is a second source of truth
// next to Stats.OOMKills, and the only one in ModeNone.
func KernelOOMKilled(pid int, since time.Time) (bool, string) {
	var sinceBoot time.Duration = -1
	if !since.IsZero() {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err == nil {
			// One second of slack for the clocks' disagreement.
			sinceBoot = time.Duration(ts.Nano()) - time.Since(since) - time.Second
		}
	}
	deadline := time.Now().Add(kernelLogTimeout)
	recs, kerr := readKmsg(deadline)
	if kerr != nil {
		var derr error
		recs, derr = readDmesg(deadline)
		if derr != nil {
			return false, fmt.Sprintf("kernel log unavailable: /dev/kmsg: %v; dmesg: %v", kerr, derr)
		}
	}
	if line, ok := findOOMKill(recs, pid, sinceBoot); ok {
		return true, line
	}
	return false, fmt.Sprintf("no OOM kill of pid %d in the kernel log since %s", pid, since.Format(time.RFC3339))
}

// kernelRecord is one kernel log message; At is the time since boot (-1 if unknown).
type kernelRecord struct {
	At  time.Duration
	Msg string
}

// readKmsg reads every record now in /dev/kmsg without blocking.
func readKmsg(deadline time.Time) ([]kernelRecord, error) {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var recs []kernelRecord
	buf := make([]byte, 8192)
	for time.Now().Before(deadline) {
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EAGAIN:
			return recs, nil
		case err == unix.EPIPE || err == unix.EINTR:
			continue // EPIPE: records overwritten while reading
		case err != nil:
			return recs, err
		case n == 0:
			return recs, nil
		}
		if r, ok := parseKmsgRecord(string(buf[:n])); ok {
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// parseKmsgRecord parses "prio,seq,usec,flags[,...];message\n[ KEY=value\n]...".
func parseKmsgRecord(s string) (kernelRecord, bool) {
	head, msg, ok := strings.Cut(s, ";")
	if !ok {
		return kernelRecord{}, false
	}
	f := strings.Split(head, ",")
	if len(f) < 3 {
		return kernelRecord{}, false
	}
	us, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return kernelRecord{}, false
	}
	msg, _, _ = strings.Cut(msg, "\n")
	return kernelRecord{At: time.Duration(us) * time.Microsecond, Msg: msg}, true
}

func readDmesg(deadline time.Time) ([]kernelRecord, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, "dmesg").Output()
	if err != nil {
		return nil, err
	}
	return parseDmesg(string(out)), nil
}

var dmesgLineRE = regexp.MustCompile(`^\[\s*(\d+)\.(\d+)\]\s?(.*)$`)

// parseDmesg parses dmesg's default "[ seconds.micros] message" lines.
func parseDmesg(s string) []kernelRecord {
	var recs []kernelRecord
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		m := dmesgLineRE.FindStringSubmatch(line)
		if m == nil {
			recs = append(recs, kernelRecord{At: -1, Msg: line})
			continue
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		frac := m[2]
		for len(frac) < 9 {
			frac += "0"
		}
		ns, _ := strconv.ParseInt(frac[:9], 10, 64)
		recs = append(recs, kernelRecord{At: time.Duration(sec)*time.Second + time.Duration(ns), Msg: m[3]})
	}
	return recs
}

var oomKillRE = regexp.MustCompile(`[Kk]illed process (\d+)\b`)

// findOOMKill returns the last OOM-killer line about pid logged at or after
// sinceBoot (negative: any time; records with unknown time always count).
func findOOMKill(recs []kernelRecord, pid int, sinceBoot time.Duration) (string, bool) {
	want := strconv.Itoa(pid)
	found, ok := "", false
	for _, r := range recs {
		if sinceBoot >= 0 && r.At >= 0 && r.At < sinceBoot {
			continue
		}
		for _, m := range oomKillRE.FindAllStringSubmatch(r.Msg, -1) {
			if m[1] == want {
				found, ok = r.Msg, true
			}
		}
	}
	return found, ok
}
