package training

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/reports"
)

// A trainee's sessions are kept, one line each, in a file of their own
// that a later session appends to; a name cannot leave the folder.
func TestKeepAndReadHistory(t *testing.T) {
	dir := t.TempDir()
	r := &reports.Report{StartedAt: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC), Dir: "out/runs/x",
		Scenario: &record.ScenarioInfo{ID: "il-0587-zk-treecache-reconnect-storm"}, Case: record.CaseRef{ID: "IL-0587"},
		Variants: []*record.VariantResult{{Name: "vulnerable"}},
		Debrief:  &record.Debrief{Trainee: "../sam", Score: 5, Max: 7, DiagnosedAfter: 42, Outcome: "violated"}}
	path, err := Keep(dir, r)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, ".._sam.jsonl"), path)
	r.Debrief = &record.Debrief{Trainee: "../sam", Score: 2, Max: 7, DiagnosedAfter: -1, Outcome: "violated"}
	_, err = Keep(dir, r)
	require.NoError(t, err)
	hs, err := History(dir, "../sam")
	require.NoError(t, err)
	require.Len(t, hs, 2)
	require.True(t, hs[0].Diagnosed)
	require.Equal(t, 42.0, hs[0].DiagnosedAfter)
	require.False(t, hs[1].Diagnosed)
	require.Equal(t, "il-0587-zk-treecache-reconnect-storm", hs[1].Scenario)
	none, err := History(dir, "nobody")
	require.NoError(t, err)
	require.Empty(t, none)
	entries, _ := os.ReadDir(filepath.Dir(dir))
	require.Len(t, entries, 1, "nothing written outside the folder")
}
