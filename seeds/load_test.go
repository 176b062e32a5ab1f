package seeds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeRecord writes the embedded IL-0587 record under another id.
func writeRecord(t *testing.T, dir, file, id string) string {
	t.Helper()
	data, err := embedded.ReadFile("il-0587.yaml")
	require.NoError(t, err)
	text := strings.Replace(string(data), "id: IL-0587", "id: "+id, 1)
	path := filepath.Join(dir, file)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	writeRecord(t, dir, "mine.yaml", "MY-0002")
	one := writeRecord(t, dir, "other.yml", "MY-0001")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a record"), 0o644))

	recs, skipped, err := LoadDir(dir)
	require.NoError(t, err)
	require.Empty(t, skipped)
	require.Len(t, recs, 2)
	require.Equal(t, "MY-0001", recs[0].ID, "sorted by id")
	require.Equal(t, "MY-0002", recs[1].ID)

	recs, _, err = LoadDir(one)
	require.NoError(t, err, "one file")
	require.Len(t, recs, 1)
	require.Equal(t, one, recs[0].File())
}

func TestLoadDirRefuses(t *testing.T) {
	_, _, err := LoadDir(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "load case records")

	empty := t.TempDir()
	_, _, err = LoadDir(empty)
	require.ErrorContains(t, err, "no *.yaml file")

	dup := t.TempDir()
	writeRecord(t, dup, "a.yaml", "MY-0001")
	writeRecord(t, dup, "b.yaml", "my-0001")
	_, _, err = LoadDir(dup)
	require.ErrorContains(t, err, filepath.Join(dup, "b.yaml")+`: id "my-0001" already used by `+filepath.Join(dup, "a.yaml"))

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "x.yaml"), []byte("id: X-1\nsummery: typo\n"), 0o644))
	_, _, err = LoadDir(bad)
	require.ErrorContains(t, err, filepath.Join(bad, "x.yaml"))
	require.ErrorContains(t, err, "summery")
}

// A scenario beside the records of a folder is skipped with a line that
// says so; given as the one file, it is refused as a scenario, in a line.
func TestLoadDirSkipsScenarios(t *testing.T) {
	dir := t.TempDir()
	writeRecord(t, dir, "mine.yaml", "MY-0001")
	scenario := filepath.Join(dir, "my-scenario.yaml")
	require.NoError(t, os.WriteFile(scenario, []byte("id: my-scenario\ncase: MY-0001\nsystem: zookeeper\nworkload:\n  kind: zk-tree-mirror\nhypotheses: []\n"), 0o644))

	recs, skipped, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, []string{scenario + ": skipped: a scenario, not a case record"}, skipped)

	_, _, err = LoadDir(scenario)
	require.ErrorIs(t, err, ErrScenario)
	require.Len(t, strings.Split(err.Error(), "\n"), 1, err.Error())
	require.ErrorContains(t, err, scenario+" is a scenario, not a case record")

	only := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(only, "s.yaml"), []byte("case: X\nworkload: {}\n"), 0o644))
	_, skipped, err = LoadDir(only)
	require.ErrorContains(t, err, "holds scenarios only, no case record")
	require.Len(t, skipped, 1)
}
