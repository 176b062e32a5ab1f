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

// show --effective gives each variant as a run takes it: the settings a
// variant leaves out at their defaults, the steps' parameters whole.
func TestShowEffective(t *testing.T) {
	out, errOut, code := chaoslab(t, "show", "il-0277-zk-rolling-replacement-quorum-loss", "--effective")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "# variant vulnerable (expected violated)")
	require.Contains(t, out, "# variant mitigated (expected held)")
	require.Contains(t, out, "init_limit: 30", "the mitigated topology")
	require.Contains(t, out, "strategy: full-refresh")
	require.Contains(t, out, "gate: deep", "the mitigated steps' parameters")
	require.Contains(t, out, "retry_base: 1s", "a setting no variant names, at its default")
	js, _, code := chaoslab(t, "show", "il-0277-zk-rolling-replacement-quorum-loss", "--effective", "-o", "json")
	require.Equal(t, 0, code)
	got := decode[struct {
		Variants []struct {
			Name   string `json:"name"`
			Faults []struct {
				Params map[string]any `json:"params"`
			} `json:"faults"`
		} `json:"variants"`
	}](t, js)
	require.Len(t, got.Variants, 5)
	require.NotEmpty(t, got.Variants[0].Faults[0].Params)
}
