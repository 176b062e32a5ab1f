package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/training"
	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/reports"
)

// train --history prints a trainee's kept sessions, and says so when
// there are none.
func TestTrainHistory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CHAOSLAB_TRAINEES", dir)
	out, errOut, code := chaoslab(t, "train", "--history", "--trainee", "sam")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no training session kept for sam yet")
	r := &reports.Report{StartedAt: time.Now(), Dir: "out/runs/il-0206-x", Case: record.CaseRef{ID: "IL-0206"},
		Variants: []*record.VariantResult{{Name: "vulnerable"}},
		Debrief:  &record.Debrief{Trainee: "sam", Score: 4, Max: 6, DiagnosedAfter: 75, Outcome: "violated"}}
	_, err := training.Keep(dir, r)
	require.NoError(t, err)
	out, _, code = chaoslab(t, "train", "--history", "--trainee", "sam")
	require.Equal(t, 0, code)
	require.Contains(t, out, "IL-0206")
	require.Contains(t, out, "4 of 6")
	require.Contains(t, out, "right after 75 s")
	_, errOut, code = chaoslab(t, "train")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "give a scenario (or --history)")
}
