package seeds

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadFile(t *testing.T) {
	r, err := LoadFile("il-0587.yaml")
	require.NoError(t, err)
	require.Equal(t, "IL-0587", r.ID)

	dir := t.TempDir()
	bad := filepath.Join(dir, "mine.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("id: MY-1\n"), 0o644))
	_, err = LoadFile(bad)
	require.ErrorContains(t, err, bad+": organisation: required", "validated, and named by its path")

	_, err = LoadFile(dir)
	require.ErrorContains(t, err, "is not a regular file")
	_, err = LoadFile(filepath.Join(dir, "missing.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)

	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxRecordBytes+1), 0o644))
	_, err = LoadFile(big)
	require.ErrorContains(t, err, "more than a case record's")
}
