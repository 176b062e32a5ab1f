package cases

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/sim"
	"github.com/chaoslab/chaoslab/verdict"
)

// Every case names a case record of seeds/, a model file that exists, and a
// harness scenario that exists (when it names one).
func TestCasesAreLinked(t *testing.T) {
	require.NotEmpty(t, All())
	for _, c := range All() {
		ref := reports.CaseRefFor(c.ID)
		require.NotEmpty(t, ref.Record, "case %s has no record in seeds/", c.ID)
		require.NotEmpty(t, ref.Sources, "case %s: its record links no source", c.ID)
		require.FileExists(t, filepath.Join("..", "..", c.Model))
		if c.Scenario != "" {
			_, err := scenarios.Find(c.Scenario)
			require.NoError(t, err, "case %s", c.ID)
		}
		got, err := Get(c.ID)
		require.NoError(t, err)
		require.Same(t, c, got)
		for _, a := range c.Aliases {
			got, err := Get(a)
			require.NoError(t, err)
			require.Same(t, c, got)
		}
	}
	_, err := Get("no-such-case")
	require.ErrorContains(t, err, `no such case`)
	require.ErrorContains(t, err, "IL-0384") // as `chaoslab list` prints it
}

func TestBadOptions(t *testing.T) {
	c, err := Get("aws-ebs-2011")
	require.NoError(t, err)
	_, err = Run(context.Background(), c, Options{Scale: "galactic"})
	require.ErrorContains(t, err, `scale "galactic"`)
	_, err = Run(context.Background(), c, Options{Scale: ScaleIncident, Calibrate: "x"})
	require.ErrorContains(t, err, "--calibrate goes with --scale harness")
}

// The EBS case end to end: REPRODUCED, every published number within its
// band, and a report that is written, loaded back and re-checked to the
// same verdict.
func TestEBSCaseReport(t *testing.T) {
	c, err := Get("ebs")
	require.NoError(t, err)
	r, err := Run(context.Background(), c, Options{Seed: 1, Rerun: "chaoslab sim aws-ebs-2011 --seed 1"})
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.True(t, r.ExpectationMet)
	require.Len(t, r.Incident, 4)
	for _, row := range r.Incident {
		require.True(t, row.Matches, "%s: simulated %v, band %v-%v", row.Metric, row.Simulated, row.Low, row.High)
	}
	require.Equal(t, "seeds/aws-ebs-2011.yaml", r.Case.Record)
	v := r.Variant("vulnerable")
	require.NotNil(t, v.SeriesFor("zone.stuck_share", "zone", ""))
	require.Greater(t, float64(v.Metrics["sim.events"]), 1e6)

	dir := t.TempDir()
	require.NoError(t, reports.Write(r, dir))
	for _, f := range []string{"report.json", "report.md", "index.html"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Against the write-up")
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(html), "<svg")
	back, err := reports.Load(dir)
	require.NoError(t, err)
	vd, _, err := back.Recheck()
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, vd)
	require.Len(t, back.Incident, 4)
}

// A metastability map of the EBS model: a small cut recovers by itself, the
// incident's own point stays down; the map is the same whatever the number
// of workers, and it lands in the report with its SVG and its letter grid.
func TestEBSSweepShape(t *testing.T) {
	if testing.Short() {
		t.Skip("sweep: a dozen full model runs")
	}
	c, err := Get("aws-ebs-2011")
	require.NoError(t, err)
	sw := c.Sweeps(Options{Seed: 1})[0]
	sw.X, sw.Y = []float64{0.02, 0.11}, []float64{300, 1200}
	m1, err := runSweep(context.Background(), sw, Options{Workers: 1, Progress: func(string, ...any) {}})
	require.NoError(t, err)
	m2, err := runSweep(context.Background(), sw, Options{Workers: 3, Progress: func(string, ...any) {}})
	require.NoError(t, err)
	require.Equal(t, m1.Outcomes, m2.Outcomes)
	require.Equal(t, sim.Recovered.String(), m1.Outcomes[0][0], "2%% cut for 5 min")
	require.Equal(t, sim.StayedDown.String(), m1.Outcomes[1][1], "the incident's 11%% for 20 min")
	require.Equal(t, 4, m1.Runs)

	r := &reports.Report{Schema: reports.SchemaVersion, RunID: "t", Backend: "sim", Maps: []reports.Map{m1}}
	dir := t.TempDir()
	require.NoError(t, reports.Write(r, dir))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Metastability maps")
	require.Contains(t, string(md), " D")
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(html), "the incident")
}

// An interrupted sweep gives a report marked aborted, not an error.
func TestAbortedSweep(t *testing.T) {
	c, err := Get("aws-ebs-2011")
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("test interrupt"))
	r, err := Run(ctx, c, Options{Seed: 1, Sweep: true})
	require.NoError(t, err)
	require.Equal(t, verdict.Aborted, r.Verdict)
	require.Contains(t, r.Reason, "test interrupt")
}

// The IL-0384 case at the incident's scale: the fast restart never
// recovers, the slow one matches the write-up's 12 h 16 min, the
// mitigation holds.
func TestKinesisCase(t *testing.T) {
	if testing.Short() {
		t.Skip("three full-scale runs, one of them a 3.2-million-removal thrash")
	}
	c, err := Get("il-0384")
	require.NoError(t, err)
	r, err := Run(context.Background(), c, Options{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	byMetric := map[string]reports.IncidentRow{}
	for _, row := range r.Incident {
		byMetric[row.Variant+" "+row.Metric] = row
	}
	require.True(t, byMetric["vulnerable-slow-restart fleet.recovered_s"].Matches)
	require.True(t, byMetric["vulnerable fleet.over_limit_share"].Matches)
	require.True(t, byMetric["vulnerable fleet.recovered_s"].Matches)
	// Where the model does not match, the report says so.
	require.False(t, byMetric["vulnerable-slow-restart fleet.half_down_after_add_s"].Matches)
}

// IL-0587 at the harness's scale, calibrated from the reference harness run:
// the same verdict as the harness, every compared figure within 2x.
func TestZKCaseAgreesWithHarness(t *testing.T) {
	c, err := Get("il-0587-zk-treecache-reconnect-storm")
	require.NoError(t, err)
	ref := filepath.Join("..", "..", ZKReferenceReport)
	r, err := Run(context.Background(), c, Options{Scale: ScaleHarness, Calibrate: ref, Seed: 1})
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.Len(t, r.Comparisons, 1, "the scenario's client-queue-20x")
	require.True(t, r.Comparisons[0].Held)
	require.Len(t, r.Incident, 6)
	for _, row := range r.Incident {
		require.Equal(t, "harness run", row.Against)
		require.True(t, row.Matches, "%s %s: sim %v, harness band %v-%v", row.Variant, row.Metric, row.Simulated, row.Low, row.High)
	}
	dir := t.TempDir()
	require.NoError(t, reports.Write(r, dir))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Against the harness run")
}

func TestZKCalibrationErrors(t *testing.T) {
	c, err := Get("il-0587")
	require.NoError(t, err)
	_, err = Run(context.Background(), c, Options{Scale: ScaleHarness, Calibrate: "/nonexistent/report.json"})
	require.ErrorContains(t, err, "/nonexistent/report.json")

	// A report of another scenario is refused by name.
	other := &reports.Report{Schema: reports.SchemaVersion, RunID: "x", Scenario: &reports.ScenarioInfo{ID: "il-0384-kinesis-thread-per-peer"}}
	dir := t.TempDir()
	require.NoError(t, other.Save(dir))
	_, err = Run(context.Background(), c, Options{Scale: ScaleHarness, Calibrate: dir})
	require.ErrorContains(t, err, "is a run of scenario il-0384-kinesis-thread-per-peer, want il-0587-zk-treecache-reconnect-storm")
}

// Every number a case compares with is in its case record (a missing one
// would panic in number).
func TestIncidentRowsComeFromRecords(t *testing.T) {
	for _, c := range All() {
		res := map[string]sim.Result{}
		for _, v := range []string{"vulnerable", "vulnerable-slow-restart", "responders", "mitigated"} {
			res[v] = sim.Result{Metrics: map[string]float64{}}
		}
		rows := c.Incident(res)
		require.NotEmpty(t, rows, c.ID)
		n := 0
		for _, row := range rows {
			require.NotEmpty(t, row.Published, "%s %s", c.ID, row.Metric)
			if row.Number != "" {
				n++
			}
		}
		require.NotZero(t, n, "case %s compares with no number of its record", c.ID)
	}
}

// IL-0384 at the harness's scale, calibrated from the reference harness
// run: the model agrees with the harness except on the all-at-once restart
// of the vulnerable fleet (see sim/kinesis_calib_test.go), so the run is
// INCONCLUSIVE and the report says which figure disagrees.
func TestKinesisCaseAgainstHarness(t *testing.T) {
	c, err := Get("il-0384")
	require.NoError(t, err)
	r, err := Run(context.Background(), c, Options{Scale: ScaleHarness, Calibrate: filepath.Join("..", "..", KinesisReferenceReport), Seed: 1})
	require.NoError(t, err)
	require.Equal(t, verdict.Inconclusive, r.Verdict, r.Reason)
	require.Contains(t, r.Reason, "fast-restart-slower-than-slow")
	for _, v := range r.Variants {
		require.Equal(t, v.Expect, v.Verdict, v.Name)
	}
	bad := map[string]bool{}
	for _, row := range r.Incident {
		require.Equal(t, "harness run", row.Against)
		if !row.Matches {
			bad[row.Variant+" "+row.Metric] = true
		}
	}
	require.Equal(t, map[string]bool{"vulnerable fleet.recovery_after_restart_s": true}, bad)
}
