// Package labtest holds what chaoslab's integration tests share, in the
// style of consul's sdk/testutil: skips for what a test needs, a logger
// that writes to the test's log, and checks that a run left nothing behind.
package labtest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)

// SkipUnlessZooKeeper skips a test that starts real ZooKeeper servers as
// processes (with -short, or without root for cgroups) and installs
// Debian's ZooKeeper when it is missing.
func SkipUnlessZooKeeper(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts a real ZooKeeper ensemble (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root for cgroups")
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		if err := zookeeper.EnsureInstalled(context.Background(), slog.Default()); err != nil {
			t.Fatal(err)
		}
	}
}

// Logger writes to the test's log (the default logger without a test).
func Logger(t *testing.T) *slog.Logger {
	if t == nil {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(Writer{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// Writer is an io.Writer to the test's log, a line per call.
type Writer struct{ T *testing.T }

func (w Writer) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// NoProcessNaming fails when a process's command line names any of the
// strings (a run's folder, its etcd prefix).
func NoProcessNaming(t *testing.T, names ...string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.Contains(string(b), n) {
				t.Errorf("a process of the run is still alive: %s: %q", p, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
}

// NoCgroups fails when a cgroup whose name holds id is left (v1 or v2).
func NoCgroups(t *testing.T, id string) {
	t.Helper()
	v1, _ := filepath.Glob("/sys/fs/cgroup/*/chaoslab/*" + id + "*")
	v2, _ := filepath.Glob("/sys/fs/cgroup/chaoslab/*" + id + "*")
	if left := append(v1, v2...); len(left) > 0 {
		t.Errorf("cgroups of the run are left: %v", left)
	}
}

// LocalPlacement is the registered local placement (its package linked by
// the test), skipping the test where it cannot run here.
func LocalPlacement(t *testing.T, ctx context.Context, log *slog.Logger) lab.Placement {
	t.Helper()
	newPlacement, err := lab.GetPlacement("local")
	if err != nil {
		t.Fatalf("get placement: %v", err)
	}
	plc, err := newPlacement(lab.PlacementOptions{Log: log})
	if err != nil {
		t.Fatalf("new placement: %v", err)
	}
	if err := plc.Available(ctx); err != nil {
		t.Skipf("local placement: %v", err)
	}
	return plc
}

// SkipUnlessRoot skips an integration test with -short or without root
// (cgroups, nftables).
func SkipUnlessRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts real servers (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("integration test: needs root for cgroups")
	}
}

// SkipUnlessCgroups skips an integration test with -short, without root
// or without cgroups, which enforce the limits it judges (need: "the
// thread limit"); starts says what the test starts.
func SkipUnlessCgroups(t *testing.T, starts, need string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("integration test: starts %s (skipped with -short)", starts)
	}
	if why := cannotRun("local"); why != "" {
		t.Skipf("integration test: needs cgroups for %s: %s", need, why)
	}
}

// SetParams sets a fault's (or any plug-in's) parameters as a scenario
// gives them, by their yaml names.
func SetParams(t *testing.T, v any, params map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(params)
	if err != nil {
		t.Fatalf("encode params: %v", err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("set params %v: %v", params, err)
	}
}
