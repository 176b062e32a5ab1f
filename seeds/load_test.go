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

	recs, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, "MY-0001", recs[0].ID, "sorted by id")
	require.Equal(t, "MY-0002", recs[1].ID)

	recs, err = LoadDir(one)
	require.NoError(t, err, "one file")
	require.Len(t, recs, 1)
	require.Equal(t, one, recs[0].File())
}

func TestLoadDirRefuses(t *testing.T) {
	_, err := LoadDir(filepath.Join(t.TempDir(), "missing"))
	require.ErrorContains(t, err, "load case records")

	empty := t.TempDir()
	_, err = LoadDir(empty)
	require.ErrorContains(t, err, "no *.yaml file")

	dup := t.TempDir()
	writeRecord(t, dup, "a.yaml", "MY-0001")
	writeRecord(t, dup, "b.yaml", "my-0001")
	_, err = LoadDir(dup)
	require.ErrorContains(t, err, filepath.Join(dup, "b.yaml")+`: id "my-0001" already used by `+filepath.Join(dup, "a.yaml"))

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "x.yaml"), []byte("id: X-1\nsummery: typo\n"), 0o644))
	_, err = LoadDir(bad)
	require.ErrorContains(t, err, filepath.Join(bad, "x.yaml"))
	require.ErrorContains(t, err, "summery")
}
