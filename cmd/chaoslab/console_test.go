package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// The closing summary opens with a sentence, and marks a vulnerable
// variant that violated, as expected, as a success.
func TestClosingSummary(t *testing.T) {
	dir := t.TempDir()
	r := &reports.Report{Dir: dir, Verdict: verdict.Reproduced, ExpectationMet: true, Case: reports.CaseRef{ID: "IL-0587"},
		Variants: []*reports.VariantResult{
			{Name: "vulnerable", Expect: verdict.Violated, Verdict: verdict.Violated, Noun: [2]string{"client", "clients"},
				Hypotheses: []verdict.Check{{ID: "no-oom", Metric: "clients.oom_kills", Observed: 16}, {ID: "ok", Held: true}}},
			{Name: "mitigated", Expect: verdict.Held, Verdict: verdict.Held, Noun: [2]string{"client", "clients"},
				Hypotheses: []verdict.Check{{ID: "no-oom", Held: true}}},
		}}
	out := closingSummary(r)
	lines := strings.Split(out, "\n")
	require.Equal(t, "IL-0587 reproduced: the vulnerable clients broke (clients.oom_kills = 16) and the mitigated clients held.", lines[0])
	require.Contains(t, lines[1], "✓ vulnerable  violated  as expected (1 of 2 hypotheses violated)")
	require.Contains(t, lines[2], "✓ mitigated   held      as expected (all 1 hypotheses held)")
	require.NotContains(t, out, "✗")
	require.Contains(t, out, "run folder: ")

	r.Variants = r.Variants[1:]
	r.Variants[0].Name, r.Variants[0].Verdict, r.ExpectationMet = "zk-paced", verdict.Violated, false
	require.True(t, strings.HasPrefix(closingSummary(r), "zk-paced broke under IL-0587, expected to hold.\n  ✗ zk-paced"), closingSummary(r))
}

// A user's client that missed beside the references leads the sentence:
// it is why the run failed.
func TestHeadlineNamesTheClientThatMissed(t *testing.T) {
	nouns := [2]string{"client", "clients"}
	r := &reports.Report{Verdict: verdict.Violated, Case: reports.CaseRef{ID: "IL-0587"},
		Variants: []*reports.VariantResult{
			{Name: "vulnerable", Expect: verdict.Violated, Verdict: verdict.Violated, Noun: nouns,
				Hypotheses: []verdict.Check{{ID: "no-oom", Metric: "clients.oom_kills", Observed: 15}}},
			{Name: "mitigated", Expect: verdict.Held, Verdict: verdict.Held, Noun: nouns},
			{Name: "treecache", Expect: verdict.Held, Verdict: verdict.Violated, Noun: nouns,
				Hypotheses: []verdict.Check{{ID: "storm", Metric: "clients.requests_per_znode_per_reconnect", Observed: 1.2}}},
		}}
	require.Equal(t, "treecache broke (clients.requests_per_znode_per_reconnect = 1.2) under IL-0587, expected to hold; as expected, vulnerable broke and mitigated held.", headline(r))
}
