// Package owner names a process by its pid and start time, the label a
// run puts on what it creates (containers, networks, namespaces) so that
// a later run sweeps only what a process that is gone left behind: a
// reused pid has another start time.
package owner

import (
	"os"
	"strconv"
	"strings"
)

// Label is this process's owner label: "<pid>-<start time in clock ticks
// since boot>".
func Label() string { return Of(os.Getpid()) }

// Of is process pid's owner label ("" when it does not run).
func Of(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// Field 22 of stat (starttime) is the 20th after the command.
	if len(f) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + "-" + f[19]
}

// Alive says whether the process a label names still runs (the same pid
// with the same start time).
func Alive(label string) bool {
	pid, _, ok := strings.Cut(label, "-")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(pid)
	return err == nil && Of(n) == label
}
