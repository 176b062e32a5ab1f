package journal_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

const scenarioID = "il-0587-zk-treecache-reconnect-storm"

// TestWriterRead: what was flushed is read back in order; a last line
// torn by the writer's death is left out, a broken line before it is an
// error.
func TestWriterRead(t *testing.T) {
	dir := t.TempDir()
	w, err := journal.Create(dir)
	require.NoError(t, err)
	w.Add(journal.Record{Kind: journal.KindEvent, Variant: "v", Event: &lab.Event{T: 1.5, Kind: "fault", Source: "zk1"}}, false)
	w.Add(journal.Record{Kind: journal.KindPoints, Variant: "v", Series: []lab.Series{{Name: "s", Source: "zk1", Unit: "u",
		Points: []lab.Point{lab.Pt(1, 2), lab.Pt(2, math.NaN())}}}}, false)
	require.NoError(t, w.Flush())
	recs, err := journal.Read(dir)
	require.NoError(t, err)
	require.Len(t, recs, 2, "Flush hands the buffered records to the kernel")
	require.Equal(t, "fault", recs[0].Event.Kind)
	require.True(t, math.IsNaN(float64(recs[1].Series[0].Points[1].V)), "a gap survives the journal")
	require.NoError(t, w.Close())

	f, err := os.OpenFile(filepath.Join(dir, journal.File), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"k":"ev","v":"v","ev":{"t":3`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	recs, err = journal.Read(dir)
	require.NoError(t, err)
	require.Len(t, recs, 2, "the torn last line is left out")

	data, err := os.ReadFile(filepath.Join(dir, journal.File))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, journal.File), append(append([]byte(`{"k":`+"\n"), data...), []byte("}\n")...), 0o644))
	_, err = journal.Read(dir)
	require.ErrorContains(t, err, "line 1")
}

// TestNilWriter: a run without a journal records nothing and fails
// nothing.
func TestNilWriter(t *testing.T) {
	var w *journal.Writer
	w.Add(journal.Record{Kind: journal.KindEnd}, true)
	require.NoError(t, w.Flush())
	require.NoError(t, w.Close())
}

// TestSame: a process is named by its pid and start time; once it ended
// (and was reaped) the pair names nothing, and a wrong start time never
// matches.
func TestSame(t *testing.T) {
	me, err := journal.ProcStart(os.Getpid())
	require.NoError(t, err)
	require.True(t, journal.Same(os.Getpid(), me, journal.BootID()))
	require.False(t, journal.Same(os.Getpid(), me+1, journal.BootID()))
	require.False(t, journal.Same(os.Getpid(), me, "another-boot"))

	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	st, err := journal.ProcStart(pid)
	require.NoError(t, err)
	require.Greater(t, st, me-1)
	require.True(t, journal.Same(pid, st, ""))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.False(t, journal.Same(pid, st, ""))
}

// deadPid is the pid and start time of a process that has ended.
func deadPid(t *testing.T) (int, uint64) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	st, err := journal.ProcStart(pid)
	if err != nil {
		st = 1 // gone already: any start time names nothing
	}
	require.NoError(t, cmd.Wait())
	return pid, st
}

// sleeper is a process the test started, recorded as a program of a run.
func sleeper(t *testing.T) (*exec.Cmd, uint64) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, err := journal.ProcStart(cmd.Process.Pid)
	require.NoError(t, err)
	return cmd, st
}

// deadRun writes the journal of a run whose controller (controller, start)
// died 12.5 s into its first variant, mid-fault; extra records follow.
func deadRun(t *testing.T, controller int, start uint64, extra ...journal.Record) string {
	t.Helper()
	s, err := scenarios.Find(scenarioID)
	require.NoError(t, err)
	text, err := scenarios.ReadBuiltin(filepath.Base(s.Source))
	require.NoError(t, err)
	began := time.Now().Add(-time.Minute).Round(time.Second)
	head, err := json.Marshal(&reports.Report{Schema: reports.SchemaVersion, RunID: "il-0587-test", StartedAt: began,
		Scenario: s.Info(), Spec: new(s.Spec()), ScenarioYAML: string(text), Backend: "local", Versions: map[string]string{}})
	require.NoError(t, err)
	vr, err := json.Marshal(&reports.VariantResult{Name: "vulnerable", Expect: verdict.Violated, Noun: [2]string{"client", "clients"}})
	require.NoError(t, err)
	dir := t.TempDir()
	w, err := journal.Create(dir)
	require.NoError(t, err)
	add := func(r journal.Record) { w.Add(r, true) }
	add(journal.Record{Kind: journal.KindHead, Pid: controller, Start: start, Boot: journal.BootID(), Variants: []string{"vulnerable", "mitigated"}, Body: head})
	add(journal.Record{Kind: journal.KindVariant, Variant: "vulnerable", Body: vr})
	add(journal.Record{Kind: journal.KindSite, Variant: "vulnerable", Wall: began, RunID: "il-0587-test-vulnerable-1", Placement: "local"})
	for i := range 26 {
		tt := float64(i) * 0.5
		add(journal.Record{Kind: journal.KindPoints, Variant: "vulnerable", Series: []lab.Series{
			{Name: "server.outstanding_requests", Source: "zk1", Unit: "requests", Points: []lab.Point{lab.Pt(tt, float64(10*i))}},
			{Name: lab.SeriesLeader, Source: "cluster", Unit: "0/1", Points: []lab.Point{lab.Pt(tt, 1)}},
		}})
	}
	add(journal.Record{Kind: journal.KindEvent, Variant: "vulnerable", Event: &lab.Event{T: 10, Kind: "fault", Source: "zk2", Detail: "pause zk2 (leader) for 15s"}})
	add(journal.Record{Kind: journal.KindFaultOn, Variant: "vulnerable", Fault: &lab.FaultWindow{Fault: "pause", Target: "leader", Member: "zk2", Start: 10}})
	for _, r := range extra {
		add(r)
	}
	require.NoError(t, w.Close())
	return dir
}

// TestFinish: a run whose controller died gets a report marked aborted,
// with every sample the journal holds and the cause; a variant it never
// started is aborted as not started; `chaoslab report` reads it back.
func TestFinish(t *testing.T) {
	pid, st := deadPid(t)
	dir := deadRun(t, pid, st)
	rep, d, err := journal.Finish(dir, journal.ByReport)
	require.NoError(t, err)
	require.Equal(t, 12.5, d.LastSample)
	require.Equal(t, verdict.Aborted, rep.Verdict)
	require.Contains(t, rep.Reason, "the controller died")
	require.Contains(t, rep.Reason, "last sample at 12.5s of variant vulnerable")

	loaded, err := reports.Load(dir)
	require.NoError(t, err)
	require.Len(t, loaded.Variants, 2)
	v := loaded.Variant("vulnerable")
	require.Equal(t, verdict.Aborted, v.Verdict)
	s := v.SeriesFor("server.outstanding_requests", "zk1", "requests")
	require.Len(t, s.Points, 26)
	require.Equal(t, 12.5, s.Points[25].T)
	require.Equal(t, 250.0, float64(s.Points[25].V))
	require.Len(t, v.Events, 1)
	require.Len(t, v.Faults, 1, "the fault under way at the death is on the timeline")
	require.Equal(t, 12.5, v.Faults[0].End, "cut short at the last sample")
	require.Contains(t, v.Faults[0].Detail, "cut short")
	require.Equal(t, verdict.Aborted, loaded.Variant("mitigated").Verdict)
	require.True(t, strings.HasPrefix(loaded.Variant("mitigated").Reason, "not started: the controller died"))
	for _, f := range []string{"report.md", "index.html"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}

	_, _, err = journal.Finish(dir, journal.ByReport)
	require.ErrorContains(t, err, "its report was written")
}

// TestFinishKeepsJudgedVariant: a variant done before the death keeps its
// measured metrics and is judged on them.
func TestFinishKeepsJudgedVariant(t *testing.T) {
	pid, st := deadPid(t)
	done := &reports.VariantResult{Name: "mitigated", Expect: verdict.Held}
	done.SetMetric("clients.oom_kills", 0)
	body, err := json.Marshal(done)
	require.NoError(t, err)
	dir := deadRun(t, pid, st, journal.Record{Kind: journal.KindVariant, Variant: "mitigated", Body: body},
		journal.Record{Kind: journal.KindDone, Variant: "mitigated", Body: body})
	rep, _, err := journal.Finish(dir, journal.ByReport)
	require.NoError(t, err)
	m := rep.Variant("mitigated")
	require.NotEqual(t, verdict.Aborted, m.Verdict)
	require.Equal(t, 0.0, float64(m.Metrics["clients.oom_kills"]))
	require.Equal(t, verdict.Aborted, rep.Verdict)
}

// TestFinishRefusesLiveController: the run of a live controller is not
// finished, nor cleaned after.
func TestFinishRefusesLiveController(t *testing.T) {
	me, err := journal.ProcStart(os.Getpid())
	require.NoError(t, err)
	dir := deadRun(t, os.Getpid(), me)
	_, _, err = journal.Finish(dir, journal.ByReport)
	require.ErrorContains(t, err, "still running")
	run, err := journal.Load(dir)
	require.NoError(t, err)
	require.ErrorContains(t, run.Clean(context.Background(), labLog(t)), "still running")
	done, err := journal.Sweep(context.Background(), filepath.Dir(dir), labLog(t))
	require.NoError(t, err)
	require.Empty(t, done)
}

// TestSweepKillsOnlyTheRunsOwn: the sweep kills a program the journal
// names when it is still the same process, never a process whose start
// time differs (a reused pid); it writes the report and then leaves the
// folder alone.
func TestSweepKillsOnlyTheRunsOwn(t *testing.T) {
	pid, st := deadPid(t)
	own, ownStart := sleeper(t)
	other, otherStart := sleeper(t)
	dir := deadRun(t, pid, st,
		journal.Record{Kind: journal.KindProc, Variant: "vulnerable", Name: "client-01", Pid: own.Process.Pid, Start: ownStart, Boot: journal.BootID()},
		journal.Record{Kind: journal.KindProc, Variant: "vulnerable", Name: "client-02", Pid: other.Process.Pid, Start: otherStart + 1, Boot: journal.BootID()})
	exited := make(chan error, 1)
	go func() { exited <- own.Wait() }()

	done, err := journal.Sweep(context.Background(), filepath.Dir(dir), labLog(t))
	require.NoError(t, err)
	require.Equal(t, []string{dir}, done)
	select {
	case err := <-exited:
		require.ErrorContains(t, err, "killed")
	case <-time.After(5 * time.Second):
		t.Fatal("the run's own program is still running after the sweep")
	}
	require.True(t, journal.Same(other.Process.Pid, otherStart, ""), "a process the journal does not name exactly is left alone")
	r, err := reports.Load(dir)
	require.NoError(t, err)
	require.Equal(t, verdict.Aborted, r.Verdict)

	again, err := journal.Sweep(context.Background(), filepath.Dir(dir), labLog(t))
	require.NoError(t, err)
	require.Empty(t, again, "a swept folder is not swept again")
}

// TestSweepCleansAfterReport: a folder `chaoslab report` finished is still
// cleaned after by the next sweep, once.
func TestSweepCleansAfterReport(t *testing.T) {
	pid, st := deadPid(t)
	own, ownStart := sleeper(t)
	dir := deadRun(t, pid, st,
		journal.Record{Kind: journal.KindProc, Variant: "vulnerable", Name: "zk1", Pid: own.Process.Pid, Start: ownStart, Boot: journal.BootID()})
	_, _, err := journal.Finish(dir, journal.ByReport)
	require.NoError(t, err)
	require.True(t, journal.Same(own.Process.Pid, ownStart, ""), "report writes the report only")
	done, err := journal.Sweep(context.Background(), filepath.Dir(dir), labLog(t))
	require.NoError(t, err)
	require.Equal(t, []string{dir}, done)
	_ = own.Wait()
	require.False(t, journal.Same(own.Process.Pid, ownStart, ""))
	recs, err := journal.Read(dir)
	require.NoError(t, err)
	require.Equal(t, journal.BySweep, recs[len(recs)-1].By)
}
