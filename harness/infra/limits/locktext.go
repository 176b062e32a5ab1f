package limits

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockText locks the pages of the running executable's own file mappings
// (code, read-only data) in memory and returns how many bytes it locked.
//
// A container's memory limit also holds the page cache of its executable,
// and when the heap grows the kernel reclaims those clean pages (and faults
// them in again) before it OOM-kills: the container gets more room for its
// heap than the limit says. A local process has no such slack: its
// executable's pages are charged to the cgroup that first read them, not
// to its own. Locked pages cannot be reclaimed, so a container whose limit
// is its memory limit plus the locked pages has exactly the memory limit
// for its heap, as a local process does. It needs RLIMIT_MEMLOCK above the
// executable's size (the container launcher raises it).
func LockText() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("lock text: %w", err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("lock text: %w", err)
	}
	defer f.Close()
	var locked int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-00c8e000 r-xp 00000000 08:01 123 /chaoslab
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || filepath.Clean(fields[5]) != exe {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MLOCK, uintptr(start), uintptr(end-start), 0); errno != 0 {
			return locked, fmt.Errorf("lock text: mlock %s %s: %w", fields[0], fields[1], errno)
		}
		locked += int64(end - start)
	}
	if err := sc.Err(); err != nil {
		return locked, fmt.Errorf("lock text: %w", err)
	}
	if locked == 0 {
		return 0, fmt.Errorf("lock text: no mapping of %s in /proc/self/maps", exe)
	}
	return locked, nil
}

// LockTextEnv, set to 1 in an agent's environment, asks it to lock its
// executable's pages before it starts (see LockText).
const LockTextEnv = "CHAOSLAB_LOCK_TEXT"
