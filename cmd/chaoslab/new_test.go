package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// chaoslab new scenario writes a skeleton that chaoslab validate takes,
// refuses to overwrite a file, and asks for --kind where the system has
// several kinds.
func TestNewScenario(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mine.yaml")
	_, errOut, code := chaoslab(t, "new", "scenario", "--case", "il-0587", "-o", file)
	require.Equal(t, 0, code, errOut)
	out, errOut, code := chaoslab(t, "validate", file)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	require.Contains(t, out, "(il-0587-new)")
	_, errOut, code = chaoslab(t, "new", "scenario", "--case", "IL-0587", "-o", file)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "file exists")
	_, errOut, code = chaoslab(t, "new", "scenario", "--case", "IL-0384")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "give --kind: on etcd one of")
	out, _, code = chaoslab(t, "new", "scenario", "--case", "IL-0384", "--kind", "exec", "--system", "consul")
	require.Equal(t, 0, code)
	require.Contains(t, out, "system: consul")
	require.Contains(t, out, "command: [./my-client]")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(data), "case: IL-0587")
}
