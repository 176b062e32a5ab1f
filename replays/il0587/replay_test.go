package il0587_test

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

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/harness/runner"
	"github.com/chaoslab/chaoslab/harness/tier"
	"github.com/chaoslab/chaoslab/replays/replaytest"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

func builtin(t *testing.T) *scenarios.Scenario {
	t.Helper()
	return replaytest.Builtin(t, "il-0587-zk-treecache-reconnect-storm", "")
}

// TestIntegration_ReplayIL0587 replays the built-in scenario for real, at
// its ci size: it must reproduce the incident, with the figures 2x past
// their bounds.
func TestIntegration_ReplayIL0587(t *testing.T) {
	labtest.SkipUnlessZooKeeper(t)
	s := replaytest.Builtin(t, "il-0587-zk-treecache-reconnect-storm", "ci")
	bin := replaytest.ChaoslabBinary(t)
	out := labtest.RunDir(t)
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
	// The servers' backlog breaks its bound; it is not what decides (the
	// OOM kills from the stall on and the per-client backlog above do):
	// since the clients' Go runtime is told 80% of their limit, the
	// vulnerable ones die sooner into the storm and the servers' peak
	// moved from 507-667 to 319 (seed 1).
	require.Greater(t, float64(vul.Metrics["servers.outstanding_requests.max_from_fault"]), 150.0, "the servers' queues filled (the evidence row's band)")
	// The busiest vulnerable client's backlog at the servers breaks
	// backlog-bounded (40); the mitigated ones stand 2x inside it. It is
	// not what decides the vulnerable verdict (the OOM kills from the
	// stall on do, a count against none allowed) and at this size it
	// spreads: 52, 172 and 510 in three runs of 2026-12-06, so the 2x
	// margin is asserted on the comparison above, not here.
	require.Greater(t, float64(vul.Metrics["clients.server_outstanding.max_from_fault"]), 40.0)
	require.LessOrEqual(t, float64(mit.Metrics["clients.server_outstanding.max_from_fault"]), 20.0)
	require.Zero(t, float64(vul.Metrics["clients.oom_kills_before_fault"]), "the steady state had no OOM kill")
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
	v, _, err := back.Recheck()
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
	replaytest.AssertCleanedUp(t, r)
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
	bin := replaytest.ChaoslabBinary(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	out := labtest.RunDir(t)
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
	replaytest.AssertCleanedUp(t, r)
}

// TestIntegration_ReplayIL0587Docker replays the same scenario, unchanged,
// with the servers and the clients in containers. It needs the images:
// `chaoslab images build` makes them without a registry (.ci/run does).
func TestIntegration_ReplayIL0587Docker(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0587 (local processes), TestIntegration_AbortMidFaultDocker and the ZooKeeper smoke test on containers")
	if testing.Short() {
		t.Skip("integration test: starts containers (skipped with -short)")
	}
	ctx := context.Background()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	s := builtin(t)
	replaytest.SkipUnlessDockerImages(t, s)
	out := labtest.RunDir(t)
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
	replaytest.SkipUnlessDockerImages(t, s)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	onEvent := func(variant string, e lab.Event) {
		if e.Kind == "fault" {
			time.AfterFunc(3*time.Second, func() { cancel(errors.New("test interrupt")) })
		}
	}
	r, err := runner.Run(rctx, s, runner.Options{Seed: 3, OutDir: labtest.RunDir(t), Placement: "docker", Logger: labtest.Logger(t), Variants: []string{"vulnerable"}, OnEvent: onEvent})
	require.NoError(t, err)
	require.Equal(t, verdict.Aborted, r.Verdict, r.Reason)
	require.FileExists(t, filepath.Join(r.Dir, "index.html"))
	left, err := docker.Leftovers(ctx, "")
	require.NoError(t, err)
	for _, l := range left {
		require.NotContains(t, l, s.ID, "left over after an interrupted run: %s", l)
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
