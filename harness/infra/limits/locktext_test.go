package limits

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// LockText locks the test binary's own mappings: VmLck in /proc/self/status
// grows by what it reports.
func TestLockText(t *testing.T) {
	before := vmLckKB(t)
	n, err := LockText()
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM) {
		t.Skipf("cannot lock memory here (no CAP_IPC_LOCK, small RLIMIT_MEMLOCK): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n < 1<<20 {
		t.Fatalf("locked %d bytes: the executable is bigger than that", n)
	}
	if got := vmLckKB(t) - before; got*1024 < n*9/10 {
		t.Fatalf("VmLck grew by %d kB, LockText says %d bytes", got, n)
	}
}

func vmLckKB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmLck:"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmLck in /proc/self/status")
	return 0
}
