package zkmirror

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

var pageSize = int64(os.Getpagesize())

// rss reads this process's resident set size from /proc/self/statm.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * pageSize
}

func numGoroutine() int { return runtime.NumGoroutine() }
