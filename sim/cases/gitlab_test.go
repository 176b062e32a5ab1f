package cases

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/sim"
	"github.com/chaoslab/chaoslab/verdict"
)

// IL-0206 end to end at GitLab's scale: REPRODUCED (the vulnerable fleet
// and the later discovery code alone break, the three memory fixes hold),
// every row against the write-up within its band, and the report written,
// loaded back and judged again to the same verdict.
func TestGitLabCaseReport(t *testing.T) {
	c, err := Get("IL-0206")
	require.NoError(t, err)
	r, err := Run(context.Background(), c, Options{Seed: 1})
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.Len(t, r.Incident, 6)
	for _, row := range r.Incident {
		require.True(t, row.Matches, "%s %s: simulated %v, band %v-%v", row.Variant, row.Metric, row.Simulated, row.Low, row.High)
	}
	require.NotNil(t, r.Variant("vulnerable").SeriesFor("reads.primary_share", "app", ""))
	dir := t.TempDir()
	require.NoError(t, reports.Write(r, dir))
	back, err := reports.Load(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	vd, _, err := back.Recheck()
	require.NoError(t, err)
	require.Equal(t, verdict.Reproduced, vd)
}

// At the harness's scale every harness agent test agrees and the memory
// fixes and the later code hold; the vulnerable variant is the model's
// prediction for the scenario's run: with the measured 65 ms join window
// the empty answers leave only some processes without replicas (a near
// miss of the 20% hypothesis, sim/README.md), so its verdict is not
// asserted, only that it sends more reads to the primary than the later
// code.
func TestGitLabCaseHarnessScale(t *testing.T) {
	c, err := Get("il-0206-consul-agent-oom-primary-fallback")
	require.NoError(t, err)
	r, err := Run(context.Background(), c, Options{Scale: ScaleHarness, Seed: 1})
	require.NoError(t, err)
	require.Len(t, r.Incident, 8)
	for _, row := range r.Incident {
		require.True(t, row.Matches, "%s %s: simulated %v, band %v-%v", row.Variant, row.Metric, row.Simulated, row.Low, row.High)
	}
	for _, v := range r.Variants[1:] {
		require.Equal(t, verdict.Held, v.Verdict, v.Name)
	}
	share := "app.primary_read_share.during_faults"
	require.Greater(t, float64(r.Variant("vulnerable").Metrics[share]), float64(r.Variant("mitigated-later-code").Metrics[share]))
	_, err = Run(context.Background(), c, Options{Scale: ScaleHarness, Calibrate: "no-such-report"})
	require.ErrorContains(t, err, "calibrate")
}

// --calibrate with a run of the scenario: the join window comes from its
// empty answers and its figures are compared name by name, within 2x.
func TestGitLabCaseCalibrated(t *testing.T) {
	run := &reports.Report{Schema: reports.SchemaVersion, RunID: "il-0206-run", Backend: "local",
		Scenario: &reports.ScenarioInfo{ID: sim.HarnessScenario}}
	for name, m := range map[string]map[string]verdict.Float{
		"vulnerable":         {"pods.lookups_empty": 12, "agents.restarts": 39, "agents.oom_kills": 39, "app.primary_read_share.during_faults": 0.3},
		"mitigated-2x-limit": {"agents.oom_kills": 0, "app.primary_read_share.during_faults": 0},
	} {
		v := &reports.VariantResult{Name: name}
		v.Metrics = m
		run.Variants = append(run.Variants, v)
	}
	dir := t.TempDir()
	require.NoError(t, reports.Write(run, dir))
	c, err := Get("il-0206")
	require.NoError(t, err)
	r, err := Run(context.Background(), c, Options{Scale: ScaleHarness, Seed: 1, Calibrate: dir})
	require.NoError(t, err)
	got := map[string]bool{}
	for _, row := range r.Incident {
		if row.Against == "harness run" && row.Metric == "agents.oom_kills" {
			got[row.Variant] = row.Matches
		}
	}
	require.Equal(t, map[string]bool{"vulnerable": true, "mitigated-2x-limit": true}, got)
	require.Contains(t, r.BackendWhy, "calibrated from")
}
