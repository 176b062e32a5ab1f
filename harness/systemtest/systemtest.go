// Package systemtest starts a cluster of a registered system on a
// registered placement for a component's test, without the rest of the
// lab (the runner, the workload kinds): a package that a kind imports can
// test against real servers with it. The test links the system's and the
// placement's packages itself.
package systemtest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// OpenSite opens a variant's site on a registered placement (its package
// linked by the test) with the images needs named, skipping the test where
// the placement cannot run them here; the site is closed, and checked for
// leftover cgroups, when the test ends (after anything the test closes in
// its own cleanups registered later).
func OpenSite(t *testing.T, ctx context.Context, placement string, needs []lab.ImageNeed) (lab.Placement, *lab.Env) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	newPlacement, err := lab.GetPlacement(placement)
	if err != nil {
		t.Fatal(err)
	}
	plc, err := newPlacement(lab.PlacementOptions{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := plc.Available(ctx); err != nil {
		t.Skipf("%s placement: %v", placement, err)
	}
	if err := plc.Prepare(ctx, needs); err != nil {
		t.Skipf("%s placement cannot run here: %v", placement, err)
	}
	dir := t.TempDir()
	runID := fmt.Sprintf("t-%s-%d", placement, time.Now().UnixNano()%1e9)
	site, err := plc.Open(ctx, runID, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log}
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, env.LogDir)
		}
		if err := site.Close(); err != nil {
			t.Errorf("close site: %v", err)
		}
		noCgroups(t, runID)
	})
	if err := os.MkdirAll(env.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return plc, env
}

// StartSystem starts a cluster of a registered system on a registered
// placement (their packages linked by the test) with its default
// topology changed by edit (nil: as it is), skipping the test where the
// placement cannot run it here; the cluster and the site are closed, and
// checked for leftover cgroups, when the test ends.
func StartSystem(t *testing.T, ctx context.Context, system, placement string, edit func(lab.Settings)) (lab.Cluster, *lab.Env) {
	t.Helper()
	sys, err := lab.GetSystem(system)
	if err != nil {
		t.Fatal(err)
	}
	topo := sys.NewTopology()
	if edit != nil {
		edit(topo)
	}
	var needs []lab.ImageNeed
	if n, ok := topo.(lab.ImageNeeder); ok {
		needs = n.Images()
	}
	plc, env := OpenSite(t, ctx, placement, needs)
	if err := sys.Prepare(ctx, plc, env.Log); err != nil {
		t.Fatal(err)
	}
	c, err := sys.Start(ctx, env, topo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, env
}

// tWriter writes to the test's log, a line per call.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// noCgroups fails when a cgroup whose name holds id is left.
func noCgroups(t *testing.T, id string) {
	t.Helper()
	v1, _ := filepath.Glob("/sys/fs/cgroup/*/chaoslab*/*" + id + "*")
	v2, _ := filepath.Glob("/sys/fs/cgroup/chaoslab*/*" + id + "*")
	if left := append(v1, v2...); len(left) > 0 {
		t.Errorf("cgroups of the run are left: %v", left)
	}
}

// logTails logs the end of every server's log, for a failed test.
func logTails(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		t.Logf("%s, its last lines:\n  %s", filepath.Base(l), strings.Join(lines, "\n  "))
	}
}
