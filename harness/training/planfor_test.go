package training_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/training"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// myRecord is a case record of a user's own: IL-0587's under another id,
// with a cause of its own.
func myRecord(t *testing.T, path, id string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "seeds", "il-0587.yaml"))
	require.NoError(t, err)
	text := strings.Replace(string(data), "id: IL-0587", "id: "+id, 1)
	text = strings.Replace(text, "training:\n  cause: >-\n    ", "training:\n  cause: >-\n    My own cause. ", 1)
	require.Contains(t, text, "My own cause.")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}

// myScenario is the built-in IL-0587 scenario naming another case.
func myScenario(t *testing.T, dir, caseRef string) *scenarios.Scenario {
	t.Helper()
	src, err := scenarios.ReadBuiltin("il-0587-zk-treecache-reconnect-storm.yaml")
	require.NoError(t, err)
	path := filepath.Join(dir, "mine.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), "\ncase: IL-0587", "\ncase: "+caseRef, 1)), 0o644))
	s, err := scenarios.Load(path)
	require.NoError(t, err)
	return s
}

// A training plan finds a user's record: one of --cases (registered), or
// a scenario's case: path.yaml; the cause offered is that record's.
func TestPlanForAUsersRecord(t *testing.T) {
	t.Cleanup(seeds.ResetRegistered)
	old := scenarios.CaseChecker
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	t.Cleanup(func() { scenarios.CaseChecker = old })
	dir := t.TempDir()

	myRecord(t, filepath.Join(dir, "cases", "mine.yaml"), "MY-0001")
	recs, _, err := seeds.LoadDir(filepath.Join(dir, "cases"))
	require.NoError(t, err)
	require.NoError(t, seeds.Register(recs...)) // as --cases does
	p, err := training.PlanFor(myScenario(t, dir, "MY-0001"), 7)
	require.NoError(t, err)
	require.Equal(t, "MY-0001", p.Case)
	requireCause(t, p, "My own cause.")

	seeds.ResetRegistered()
	sub := filepath.Join(dir, "by-path")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	myRecord(t, filepath.Join(sub, "cases", "outage.yaml"), "MY-0002")
	p, err = training.PlanFor(myScenario(t, sub, "cases/outage.yaml"), 7)
	require.NoError(t, err)
	require.Equal(t, "MY-0002", p.Case)
	requireCause(t, p, "My own cause.")
}

func requireCause(t *testing.T, p *training.Plan, prefix string) {
	t.Helper()
	for _, c := range p.Causes {
		if strings.HasPrefix(c.Text, prefix) {
			return
		}
	}
	t.Fatalf("no cause starts %q: %+v", prefix, p.Causes)
}
