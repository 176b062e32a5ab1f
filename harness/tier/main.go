package tier

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// Main runs a package's tests, m.Run and exit. When its integration tests
// may run (not -short, not skipped with -skip '^TestIntegration'), it first
// takes a lock that every chaoslab package with integration tests takes:
// they measure timing on real servers, so packages tested side by side
// (go test ./... runs as many as there are cores) take turns. It waits
// before m.Run, outside the tests' -timeout. before, when set, runs once
// the lock is held (a build the tests need).
func Main(m *testing.M, before func()) {
	flag.Parse()
	if integrationMayRun() {
		// Held until the process exits, which drops it.
		if _, err := lock(filepath.Join(os.TempDir(), "chaoslab-integration.lock")); err != nil {
			fmt.Fprintf(os.Stderr, "tier: %v (the tests run without it)\n", err)
		}
	}
	// before (labtest.Main: building the server binaries) is for the
	// integration tests: a unit tier run (-skip '^TestIntegration') does
	// not wait for a build, which the test command runs beside it. A unit
	// test that needs a binary after all builds it when it asks.
	if before != nil && integrationMayRun() {
		before()
	}
	os.Exit(m.Run())
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

// lock holds an exclusive lock on path until release; the kernel drops it
// when the process exits.
func lock(path string) (release func(), err error) {
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
		if !told && time.Since(start) > 2*time.Second {
			fmt.Fprintf(os.Stderr, "tier: waiting for another package's integration tests to finish (%s)\n", path)
			told = true
		}
		time.Sleep(500 * time.Millisecond)
	}
}
