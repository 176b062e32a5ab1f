package journal

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStart is a process's start time in clock ticks since boot (field 22
// of /proc/PID/stat): with the pid, it names one process, never a later
// one that reuses its pid.
func ProcStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read start time of pid %d: %w", pid, err)
	}
	// The command may hold spaces and parentheses: fields follow the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("read start time of pid %d: no command in stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("read start time of pid %d: %d fields", pid, len(f))
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read start time of pid %d: %w", pid, err)
	}
	return st, nil
}

// BootID names this boot of the machine ("" when unknown).
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Same says whether pid is, in this boot, still the process that started
// at start (a zombie counts as gone).
func Same(pid int, start uint64, boot string) bool {
	if pid <= 0 || start == 0 || (boot != "" && boot != BootID()) {
		return false
	}
	st, err := ProcStart(pid)
	if err != nil || st != start {
		return false
	}
	return !zombie(pid)
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && (s[i+2] == 'Z' || s[i+2] == 'X')
}
