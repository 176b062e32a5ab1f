package tier

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// started is about when the go command started this test binary: its
// kill timer (-timeout plus one minute) runs from then, and the wait for
// the lock and the builds before m.Run counts.
var started = time.Now()

// need is how long the package's integration tests take at most (Needs).
var need = 5 * time.Minute

// Needs says how long a package's integration tests take at most, when
// more than the 5 min assumed; call it in TestMain before Main.
func Needs(d time.Duration) { need = d }

// Main runs a package's tests, m.Run and exit. When its integration tests
// may run (not -short, not skipped with -skip '^TestIntegration'), it first
// takes a lock that every chaoslab package with integration tests takes:
// they measure timing on real servers, so packages tested side by side
// (go test ./... runs as many as there are cores) take turns. before,
// when set, runs once the lock is held (a build the tests need).
//
// The go command kills a test binary -timeout plus one minute after it
// started it, and that wait counts: when less than the package needs is
// left (go test ./... with its default 10 min, behind other packages'
// integration tests or a cold build), the integration tests are skipped
// with a message saying how to run them, and the unit tests run.
func Main(m *testing.M, before func()) {
	flag.Parse()
	if integrationMayRun() {
		deadline, limited := killDeadline()
		release, err := lock(lockPath(), deadline.Add(-need), limited)
		switch {
		case errors.Is(err, errNoTime):
			skipIntegration("waited for other packages' integration tests")
		case err != nil:
			fmt.Fprintf(os.Stderr, "tier: %v (the tests run without it)\n", err)
		}
		_ = release // held until the process exits, which drops it
	}
	// before (labtest.Main: building the server binaries) is for the
	// integration tests: a unit tier run (-skip '^TestIntegration') does
	// not wait for a build, which the test command runs beside it. A unit
	// test that needs a binary after all builds it when it asks.
	if before != nil && integrationMayRun() {
		before()
		if deadline, limited := killDeadline(); limited && time.Until(deadline) < need {
			skipIntegration("built the server binaries")
		}
	}
	os.Exit(m.Run())
}

// lockPath is the lock every package's integration tests take
// ($CHAOSLAB_INTEGRATION_LOCK: another, for tier's own test).
func lockPath() string {
	if p := os.Getenv("CHAOSLAB_INTEGRATION_LOCK"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "chaoslab-integration.lock")
}

// killDeadline is when the go command kills this binary (limited false:
// no -timeout).
func killDeadline() (time.Time, bool) {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return time.Time{}, false
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil || d <= 0 {
		return time.Time{}, false
	}
	return started.Add(d + time.Minute), true
}

// skipIntegration adds '^TestIntegration' to -skip and says why.
func skipIntegration(after string) {
	f := flag.Lookup("test.skip")
	pattern := "^TestIntegration"
	if old := f.Value.String(); old != "" {
		pattern = old + "|" + pattern
	}
	_ = f.Value.Set(pattern)
	deadline, _ := killDeadline()
	left := max(0, time.Until(deadline)).Round(time.Second)
	fmt.Fprintf(os.Stderr, "tier: integration tests skipped: this package's need about %s, and once it %s, %s was left before the go command kills this test binary (-timeout %s and a minute); run the package alone, or with -timeout 60m as ./scripts/test.sh does\n",
		need, after, left, flag.Lookup("test.timeout").Value.String())
}

// integrationMayRun: not -short, and the -skip pattern does not skip the
// integration tests.
func integrationMayRun() bool {
	if testing.Short() {
		return false
	}
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		if re, err := regexp.Compile(f.Value.String()); err == nil && re.MatchString("TestIntegration_") {
			return false
		}
	}
	return true
}

var errNoTime = errors.New("no time left")

// lock holds an exclusive lock on path until release; the kernel drops it
// when the process exits. When limited, it gives up with errNoTime at
// giveUp.
func lock(path string, giveUp time.Time, limited bool) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	start, told := time.Now(), false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if limited && time.Now().After(giveUp) {
			f.Close()
			return nil, errNoTime
		}
		if !told && time.Since(start) > 2*time.Second {
			fmt.Fprintf(os.Stderr, "tier: waiting for another package's integration tests to finish (%s)\n", path)
			told = true
		}
		time.Sleep(500 * time.Millisecond)
	}
}
