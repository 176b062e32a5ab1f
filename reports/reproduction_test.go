package reports

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/verdict"
)

// Runs written by two sessions add up in the kept file; a run of an
// earlier text of the scenario is kept but not counted; the table gives
// k of n with its Wilson interval and each figure's spread.
func TestReproductionKeepsAndCounts(t *testing.T) {
	root := t.TempDir()
	for i, seed := range []int64{1, 2, 3} {
		r := testReport(t)
		r.RunID, r.Seed = r.RunID+string(rune('a'+i)), seed
		r.StartedAt = r.StartedAt.Add(time.Duration(i) * time.Hour)
		r.EndedAt = r.StartedAt.Add(3 * time.Minute)
		if seed == 3 { // the third run did not reproduce
			r.Variants[1].Verdict, r.Verdict, r.ExpectationMet = verdict.Violated, verdict.Violated, false
			r.Reason = "mitigated: violated"
		}
		require.NoError(t, Write(r, filepath.Join(root, "session-1", r.RunID)))
	}
	found, err := FindRuns(root)
	require.NoError(t, err)
	require.Len(t, found, 3)

	keep := filepath.Join(t.TempDir(), "runs.jsonl")
	require.NoError(t, WriteKept(keep, MergeKept(nil, found[:2])))
	kept, err := ReadKept(keep)
	require.NoError(t, err)
	kept = MergeKept(kept, found) // a second session: two already kept
	require.Len(t, kept, 3)

	old := kept[0]
	oldText := []byte("id: s\ntitle: an older text\n")
	old.RunID, old.Digest, old.StartedAt = "older", RunDigest(oldText, old.Size), old.StartedAt.Add(-24*time.Hour)
	all := MergeKept(slices.Clone(kept), []KeptRun{old})
	groups := Rates(all, nil)
	require.Len(t, groups, 1)
	g := groups[0]
	require.Equal(t, "docker", g.Placement)
	require.Equal(t, 1, g.Stale)
	require.Len(t, g.Runs, 3)
	require.Equal(t, 2, g.Reproduced)
	lo, hi := Wilson(2, 3)
	require.Equal(t, lo, g.Low)
	require.Equal(t, hi, g.High)
	require.NotEmpty(t, g.Figures)
	for _, f := range g.Figures {
		require.Equal(t, 3, f.Runs, f.Check)
		require.Len(t, f.Observed, 3, f.Check)
	}

	// The scenario's text now is the older run's: only that run counts,
	// however recent the others.
	now := Rates(all, Texts{old.Scenario: oldText})[0]
	require.Len(t, now.Runs, 1)
	require.Equal(t, 3, now.Stale)

	md := RatesMarkdown(groups, keep, time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
	require.Contains(t, md, "| 2 of 3 | 21%-94% |")
	require.Contains(t, md, "seed 3 (run")
	require.Contains(t, md, "1 runs of an earlier text")
	require.Contains(t, md, "3m0s")
	out := filepath.Join(t.TempDir(), "reproduction.md")
	require.NoError(t, os.WriteFile(out, []byte(md), 0o644))
}

// A deciding figure within 2x of its threshold is flagged; one that held
// in a variant expected to break decides nothing and is not.
func TestReproductionFlagsCloseFigures(t *testing.T) {
	run := func(id string, obs float64, expect verdict.Verdict, held bool) KeptRun {
		return KeptRun{RunID: id, Scenario: "s", Placement: "local", Digest: "d", Figures: []KeptFigure{
			{Variant: "v", Expect: expect, Check: "peak", Op: "<=", Threshold: 10, Observed: verdict.Float(obs), Held: held}}}
	}
	g := Rates([]KeptRun{run("a", 2, verdict.Held, true), run("b", 6, verdict.Held, true)}, nil)[0]
	require.True(t, g.Figures[0].Close(CloseFactor), "6 against at most 10 is 1.7x")
	require.InDelta(t, 10.0/6, g.Figures[0].SmallestDeciding, 1e-9)
	g = Rates([]KeptRun{run("a", 9, verdict.Violated, true), run("b", 40, verdict.Violated, false)}, nil)[0]
	require.False(t, g.Figures[0].Close(CloseFactor), "the held 9 decides nothing; the broken 40 is 4x past")
	require.Contains(t, RatesMarkdown([]*RateGroup{g}, "k", time.Now()), "| none |")
}

// A variant expected to break is decided by its strongest break: a weak
// second break (1.3x) is not flagged while a count against none allowed
// stands.
func TestReproductionStrongestBreakDecides(t *testing.T) {
	figs := []KeptFigure{
		{Variant: "vulnerable", Expect: verdict.Violated, Check: "no-oom", Op: "==", Threshold: 0, Observed: 12},
		{Variant: "vulnerable", Expect: verdict.Violated, Check: "fresh", Op: "<=", Threshold: 20, Observed: 26},
	}
	g := Rates([]KeptRun{{RunID: "a", Scenario: "s", Placement: "local", Digest: "d", Figures: figs}}, nil)[0]
	require.True(t, g.Figures[0].Deciding)
	require.False(t, g.Figures[1].Deciding)
	require.False(t, g.Figures[1].Close(CloseFactor))
}

// An interrupted run measured nothing of the system: it is listed, not
// counted.
func TestReproductionLeavesOutAborted(t *testing.T) {
	runs := []KeptRun{
		{RunID: "a", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Reproduced, Met: true},
		{RunID: "b", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Aborted, Seed: 2},
	}
	g := Rates(runs, nil)[0]
	require.Len(t, g.Runs, 1)
	require.Equal(t, 1, g.Reproduced)
	require.Len(t, g.Aborted, 1)
	require.Contains(t, RatesMarkdown([]*RateGroup{g}, "k", time.Now()), "1 runs were interrupted before they could be judged (seeds 2)")
}

// A run in which the lab itself failed (a server that could not bind its
// port) says nothing of the incident: listed with its reason, not
// counted; a run kept before the flag says so in its reason.
func TestReproductionLeavesOutLabFailures(t *testing.T) {
	runs := []KeptRun{
		{RunID: "a", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Reproduced, Met: true, Seed: 1},
		{RunID: "b", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Inconclusive, Seed: 2, LabFailed: "variant vulnerable: start etcd2: address already in use"},
		{RunID: "c", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Inconclusive, Seed: 3, Reason: "variant vulnerable: inconclusive (expected violated): the lab failed: sweep"},
		{RunID: "d", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Inconclusive, Seed: 4, Reason: "steady state: client-07 was OOM-killed"},
		{RunID: "e", Scenario: "s", Placement: "local", Digest: "d", Verdict: verdict.Inconclusive, Seed: 5, Reason: "variant server: inconclusive (expected held): restart-fleet did not land on fleet at 72.9 s: the placement paced it"},
	}
	g := Rates(runs, nil)[0]
	require.Len(t, g.Runs, 2, "the unsteady run counts against the scenario")
	require.Len(t, g.LabFailed, 3, "the lab failed, or a fault did not land")
	md := RatesMarkdown([]*RateGroup{g}, "k", time.Now())
	require.Contains(t, md, "In 3 runs the lab itself failed or a fault did not land (seeds 2, 3, 5)")
	require.Contains(t, md, "the lab failed: variant vulnerable: start etcd2: address already in use")
}

// A share held at 1 against at least 0.95 could not have done better: it
// is not flagged, however near its bound.
func TestReproductionBestIsNotClose(t *testing.T) {
	one := verdict.Float(1)
	figs := []KeptFigure{{Variant: "mitigated", Expect: verdict.Held, Check: "routes", Op: ">=", Threshold: 0.95, Observed: 1, Held: true, Best: &one}}
	g := Rates([]KeptRun{{RunID: "a", Scenario: "s", Placement: "local", Digest: "d", Figures: figs}}, nil)[0]
	require.False(t, g.Figures[0].Close(CloseFactor))
}

// A run is identified by what it ran: a comment or another size edited
// leaves it counted; its own size or the scenario's fields edited do not.
func TestRunDigestIsWhatRan(t *testing.T) {
	text := []byte("id: s # the id\ntimeline:\n  warmup: 20s\nsizes:\n  ci:\n    timeline:\n      warmup: 10s\n")
	comment := []byte("# a comment\nid: s\ntimeline:\n  warmup: 20s   # longer\nsizes:\n  ci:\n    timeline:\n      warmup: 10s\n")
	otherCI := []byte("id: s\ntimeline:\n  warmup: 20s\nsizes:\n  ci:\n    timeline:\n      warmup: 5s\n")
	field := []byte("id: s\ntimeline:\n  warmup: 30s\nsizes:\n  ci:\n    timeline:\n      warmup: 10s\n")
	require.Equal(t, RunDigest(text, ""), RunDigest(comment, ""))
	require.Equal(t, RunDigest(text, "ci"), RunDigest(comment, "ci"))
	require.Equal(t, RunDigest(text, ""), RunDigest(otherCI, ""), "the ci size is not what a full run ran")
	require.NotEqual(t, RunDigest(text, "ci"), RunDigest(otherCI, "ci"))
	require.NotEqual(t, RunDigest(text, ""), RunDigest(field, ""))
	require.NotEqual(t, RunDigest(text, ""), RunDigest(text, "ci"))

	// Runs kept byte for byte are upgraded when their text is current,
	// and then survive an edit of a comment.
	kept := []KeptRun{{RunID: "a", Scenario: "s", Digest: Digest(text)}, {RunID: "b", Scenario: "s", Digest: Digest(field)}}
	require.Equal(t, 1, UpgradeDigests(kept, Texts{"s": text}))
	require.Equal(t, RunDigest(text, ""), kept[0].Digest)
	g := Rates(kept, Texts{"s": comment})[0]
	require.Len(t, g.Runs, 1)
	require.Equal(t, 1, g.Stale)
}

// A run judged before the proof that one of its scenario's faults landed
// was made stricter is kept, listed with the revision, and not counted:
// a miss and a pass alike.
func TestReproductionLeavesOutRunsJudgedOnAWeakerProof(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	run := func(id string, start time.Time, met bool) KeptRun {
		v := verdict.Reproduced
		if !met {
			v = verdict.Inconclusive
		}
		return KeptRun{RunID: id, Scenario: "s", Placement: "docker", Digest: "d", Seed: 1, StartedAt: start, Verdict: v, Met: met}
	}
	kept := []KeptRun{run("old-miss", at.Add(-2*time.Hour), false), run("old-pass", at.Add(-time.Hour), true), run("new", at.Add(time.Hour), true)}
	rev := Revision{Scenario: "s", Since: at, What: "restart-fleet proved its pace"}
	other := Revision{Scenario: "t", Since: at.Add(10 * time.Hour), What: "another scenario's fault"}
	g := Rates(kept, nil, rev, other)[0]
	require.Len(t, g.Unproven, 2)
	require.Len(t, g.Runs, 1)
	require.Equal(t, 1, g.Reproduced)
	md := RatesMarkdown([]*RateGroup{g}, "runs.jsonl", at)
	require.Contains(t, md, "2 runs (seeds 1, 1) were judged before restart-fleet proved its pace (2026-12-06 12:00 UTC) and are kept but not counted.")
	require.Contains(t, md, "| 1 of 1 |")
}
