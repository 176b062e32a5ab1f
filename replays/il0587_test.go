// Package replays_test replays the built-in scenarios on real servers,
// through the runner, and checks that each reproduces its incident.
package replays_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/verdict"
)

// chaoslabBinary is the CLI the harness starts as the client processes
// (`chaoslab agent zk-tree-mirror`).
func chaoslabBinary(t *testing.T) string {
	t.Helper()
	bin, err := labtest.ChaoslabBinary()
	require.NoError(t, err, "build chaoslab")
	return bin
}

func builtin(t *testing.T) *scenarios.Scenario {
	t.Helper()
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	s, err := scenarios.Find("il-0587-zk-treecache-reconnect-storm")
	require.NoError(t, err)
	return s
}

// assertCleanedUp checks that nothing of the run is left: no process whose
// command line names the run folder, no cgroup of the run.
func assertCleanedUp(t *testing.T, r *reports.Report) {
	t.Helper()
	labtest.NoProcessNaming(t, r.Dir)
	labtest.NoCgroups(t, r.Scenario.ID)
}

// TestIntegration_ReplayIL0587 replays the built-in scenario for real: it
// must reproduce the incident. (It ran twice with the same seed until the
// AWS-EBS-2011 replay joined CI in its 3 minutes; the examples replay the
// scenario three more times, and 5 runs of 5 reproduced here with the
// figures 2x past their bounds.)
func TestIntegration_ReplayIL0587(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	s := builtin(t)
	bin := chaoslabBinary(t)
	out := t.TempDir()
	r, err := runner.Run(context.Background(), s, runner.Options{Seed: 1, OutDir: out, Placement: "local", AgentBinary: bin, Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	t.Log(reports.Summary(r))
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.True(t, r.ExpectationMet)

	vul, mit := r.Variant("vulnerable"), r.Variant("mitigated")
	require.NotNil(t, vul)
	require.NotNil(t, mit)
	require.GreaterOrEqual(t, float64(vul.Metrics["clients.oom_kills"]), 1.0, "vulnerable clients OOM-killed")
	require.Zero(t, float64(mit.Metrics["clients.oom_kills"]))
	// The busiest vulnerable client's backlog at the servers against the
	// busiest mitigated one's: the scenario's comparison (5x), 2x past it.
	// (The servers' totals are no ratio to assert: the mitigated peak
	// moves with how many clients land on one server after the
	// election, 8 to 76 in runs seen.)
	require.GreaterOrEqual(t, float64(vul.Metrics["clients.server_outstanding.max_from_fault"]),
		10*float64(mit.Metrics["clients.server_outstanding.max_from_fault"]))
	require.GreaterOrEqual(t, float64(vul.Metrics["servers.outstanding_requests.max_from_fault"]), 300.0, "2x over outstanding-bounded")
	// An OOM kill is recognised from the kernel's counters.
	var oom bool
	for _, c := range vul.Clients {
		for _, e := range c.Exits {
			if e.OOM {
				oom = true
				require.Contains(t, e.How, "OOM killer")
			}
		}
	}
	require.True(t, oom)
	// Health checked before and after the fault, fault window recorded.
	require.Len(t, vul.Faults, 1)
	require.Equal(t, "pause", vul.Faults[0].Fault)
	require.InDelta(t, 15, vul.Faults[0].End-vul.Faults[0].Start, 1)
	var before, after bool
	for _, e := range mit.Events {
		before = before || (e.Kind == "health" && strings.HasPrefix(e.Detail, "before pause: healthy"))
		after = after || (e.Kind == "health" && strings.HasPrefix(e.Detail, "after pause: healthy"))
	}
	require.True(t, before && after, "health checks around the fault")

	// The report loads back and re-checks to the same verdict.
	back, err := reports.Load(r.Dir)
	require.NoError(t, err)
	v, _, err := back.Recheck(nil)
	require.NoError(t, err)
	require.Equal(t, r.Verdict, v)
	for _, f := range []string{"report.json", "report.md", "index.html", "mitigated/logs/client-01.log"} {
		require.FileExists(t, filepath.Join(r.Dir, f))
	}
	// A server log no report links is kept gzipped when it is large.
	logs, err := filepath.Glob(filepath.Join(r.Dir, "vulnerable", "logs", "zk1.log*"))
	require.NoError(t, err)
	require.NotEmpty(t, logs, "zk1's log, plain or gzipped")
	// The servers' data directories are gone: the folder is small
	// enough to keep as a CI artifact.
	require.Less(t, folderBytes(t, r.Dir), int64(5<<20), "run folder under 5 MiB")
	assertCleanedUp(t, r)
}

// small shrinks the IL-0587 scenario for quick pipeline tests: 3 clients,
// a small tree, short windows, a long pause to interrupt.
func small(t *testing.T) *scenarios.Scenario {
	t.Helper()
	text, err := scenarios.ReadBuiltin("il-0587-zk-treecache-reconnect-storm.yaml")
	require.NoError(t, err)
	y := string(text)
	for _, e := range [][2]string{
		{"  clients: 12\n", "  clients: 3\n"}, {"  start_spread: 12s\n", "  start_spread: 0s\n"},
		{"fanout: [30, 200]", "fanout: [10, 20]"}, {"  warmup: 35s\n", "  warmup: 8s\n"},
		{"  observe: 30s\n", "  observe: 8s\n"}, {"      duration: 15s\n", "      duration: 20s\n"},
		{"    tick_ms: 2000\n", "    tick_ms: 1000\n"}, {"    heap_mb: 256\n", "    heap_mb: 128\n"},
	} {
		require.Contains(t, y, e[0])
		y = strings.Replace(y, e[0], e[1], 1)
	}
	s, err := scenarios.Parse("small.yaml", []byte(y))
	require.NoError(t, err)
	return s
}

// TestIntegration_AbortMidFault interrupts a run while the leader is
// paused: the report is still written, marked aborted, and nothing of the
// run is left (the paused server is not left stopped).
func TestIntegration_AbortMidFault(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	s := small(t)
	bin := chaoslabBinary(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	out := t.TempDir()
	onEvent := func(variant string, e lab.Event) {
		if e.Kind == "fault" {
			time.AfterFunc(3*time.Second, func() { cancel(errors.New("test interrupt")) })
		}
	}
	start := time.Now()
	r, err := runner.Run(ctx, s, runner.Options{Seed: 3, OutDir: out, Placement: "local", AgentBinary: bin, Logger: labtest.Logger(t), Variants: []string{"mitigated"}, OnEvent: onEvent})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 90*time.Second)
	require.Equal(t, verdict.Aborted, r.Verdict, r.Reason)
	require.Contains(t, r.Reason, "test interrupt")
	require.FileExists(t, filepath.Join(r.Dir, "report.json"))
	require.FileExists(t, filepath.Join(r.Dir, "index.html"))
	back, err := reports.Load(r.Dir)
	require.NoError(t, err)
	require.Equal(t, verdict.Aborted, back.Verdict)
	mit := back.Variant("mitigated")
	require.Len(t, mit.Faults, 1, "the interrupted fault is recorded")
	require.Less(t, mit.Faults[0].End-mit.Faults[0].Start, 15.0, "the fault was cut short")
	assertCleanedUp(t, r)
}

// TestIntegration_ReplayIL0587Docker replays the same scenario, unchanged,
// with the servers and the clients in containers. It needs the images:
// `chaoslab images build` makes them without a registry (.ci/run does).
func TestIntegration_ReplayIL0587Docker(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts containers (skipped with -short)")
	}
	ctx := context.Background()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	s := builtin(t)
	skipUnlessDockerImages(t, s)
	out := t.TempDir()
	r, err := runner.Run(ctx, s, runner.Options{Seed: 1, OutDir: out, Placement: "docker", Logger: labtest.Logger(t), Rerun: "test"})
	require.NoError(t, err)
	t.Log(reports.Summary(r))
	require.Equal(t, "docker", r.Backend)
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)

	// OOM kills recognised from the container state.
	var oom bool
	for _, c := range r.Variant("vulnerable").Clients {
		for _, e := range c.Exits {
			if e.OOM {
				oom = true
				require.Contains(t, e.How, "OOMKilled")
			}
		}
	}
	require.True(t, oom, "a vulnerable client container was OOM-killed")

	// Nothing of the run is left: no container, no network.
	left, err := docker.Leftovers(ctx, "")
	require.NoError(t, err)
	for _, l := range left {
		require.NotContains(t, l, s.ID, "left over after the run: %s", l)
	}
}

// TestIntegration_AbortMidFaultDocker interrupts a containerised run while
// the leader is paused: the report is marked aborted and no container or
// network of the run is left.
func TestIntegration_AbortMidFaultDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts containers (skipped with -short)")
	}
	ctx := context.Background()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	s := small(t)
	skipUnlessDockerImages(t, s)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	onEvent := func(variant string, e lab.Event) {
		if e.Kind == "fault" {
			time.AfterFunc(3*time.Second, func() { cancel(errors.New("test interrupt")) })
		}
	}
	r, err := runner.Run(rctx, s, runner.Options{Seed: 3, OutDir: t.TempDir(), Placement: "docker", Logger: labtest.Logger(t), Variants: []string{"vulnerable"}, OnEvent: onEvent})
	require.NoError(t, err)
	require.Equal(t, verdict.Aborted, r.Verdict, r.Reason)
	require.FileExists(t, filepath.Join(r.Dir, "index.html"))
	left, err := docker.Leftovers(ctx, "")
	require.NoError(t, err)
	for _, l := range left {
		require.NotContains(t, l, s.ID, "left over after an interrupted run: %s", l)
	}
}

// skipUnlessDockerImages skips when the docker placement cannot run the
// scenario here (no engine, images missing).
func skipUnlessDockerImages(t *testing.T, s *scenarios.Scenario) {
	t.Helper()
	if err := runner.Preflight(context.Background(), s, runner.Options{Placement: "docker", Logger: labtest.Logger(t)}); err != nil {
		t.Skipf("docker placement not available here: %v", err)
	}
}

// folderBytes is what the files under dir take on disk, in bytes.
func folderBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	})
	require.NoError(t, err)
	return n
}
