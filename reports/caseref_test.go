package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/verdict"
)

// userRecord writes a case record of a user's own, its one source without
// an archived copy.
func userRecord(t *testing.T, dir, file, id string) string {
	t.Helper()
	text := `id: ` + id + `
organisation: Example Corp
date: "2024-03-01"
title: A reader fleet stalls with its ZooKeeper leader
systems: [zookeeper]
lab_system: zookeeper
trigger: The leader ran at full CPU for a quarter of an hour.
chain: [The leader stopped answering., Every reader reconnected at once.]
numbers:
  - name: stall_duration
    value: 15
    unit: minutes
    approx: true
    text: How long the leader stalled.
sources:
  - url: https://example.com/postmortem
    kind: mailing-list
summary: Readers reconnected at once when the leader stalled.
`
	path := filepath.Join(dir, file)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// A report of a user's record (chaoslab --cases, or a scenario's case:
// path.yaml) carries its title, sources and file, and its figures, as a
// report of a built-in record does.
func TestCaseRefForAUsersRecord(t *testing.T) {
	t.Cleanup(seeds.ResetRegistered)
	seeds.ResetRegistered()
	dir := t.TempDir()

	builtin := CaseRefFor("IL-0587")
	require.Equal(t, "seeds/il-0587.yaml", builtin.Record)
	require.NotEmpty(t, builtin.Title)

	require.Equal(t, CaseRef{ID: "MY-0001"}, CaseRefFor("MY-0001"), "not known: the id only")
	recs, _, err := seeds.LoadDir(userRecord(t, filepath.Join(dir, "cases"), "mine.yaml", "MY-0001"))
	require.NoError(t, err)
	require.NoError(t, seeds.Register(recs...)) // as --cases does
	ref := CaseRefFor("my-0001")
	require.Equal(t, "my-0001", ref.ID)
	require.Equal(t, "A reader fleet stalls with its ZooKeeper leader", ref.Title)
	require.Equal(t, filepath.Join(dir, "cases", "mine.yaml"), ref.Record)
	require.Equal(t, []Source{{URL: "https://example.com/postmortem"}}, ref.Sources)

	spec := WithPublished(verdict.Spec{Evidence: []verdict.Evidence{{Incident: "The leader stalled.", Metric: "x", Number: "stall_duration"}}}, "MY-0001")
	require.Equal(t, "about 15 minutes (stall_duration in the case record)", spec.Evidence[0].Published)

	// A scenario's case: path.yaml, read by the scenario loader relative
	// to the scenario's folder, is found by the path the scenario gives.
	path := userRecord(t, filepath.Join(dir, "scenario", "cases"), "my-outage.yaml", "MY-0002")
	_, err = seeds.LoadFile(path)
	require.NoError(t, err)
	ref = CaseRefFor("cases/my-outage.yaml")
	require.Equal(t, "MY-0002", ref.ID, "named by its id")
	require.Equal(t, path, ref.Record)
	require.True(t, strings.HasPrefix(ref.Title, "A reader fleet"))
	spec = WithPublished(verdict.Spec{Evidence: []verdict.Evidence{{Number: "stall_duration"}}}, "cases/my-outage.yaml")
	require.Contains(t, spec.Evidence[0].Published, "about 15 minutes")
}
