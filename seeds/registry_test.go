package seeds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Records of a user's own, registered, are found by id as the built-in
// ones are, and listed beside them.
func TestRegister(t *testing.T) {
	t.Cleanup(ResetRegistered)
	ResetRegistered()
	dir := t.TempDir()
	mine, err := LoadFile(writeRecord(t, dir, "mine.yaml", "MY-0001"))
	require.NoError(t, err)

	_, err = Get("my-0001")
	require.ErrorContains(t, err, `unknown case "my-0001"`, "not known before it is registered")
	require.NoError(t, Register(mine))
	require.NoError(t, Register(mine), "the same file again")
	got, err := Get("my-0001")
	require.NoError(t, err)
	require.Equal(t, "MY-0001", got.ID)
	require.Equal(t, filepath.Join(dir, "mine.yaml"), got.File())
	require.False(t, got.Builtin())

	known, err := Known()
	require.NoError(t, err)
	ids := make([]string, len(known))
	for i, r := range known {
		ids[i] = r.ID
	}
	require.Equal(t, append(append([]string{}, wantIDs...), "MY-0001"), ids, "built-in and registered, by id")

	builtin, err := Get("IL-0587")
	require.NoError(t, err)
	require.True(t, builtin.Builtin())

	// An id of a built-in record, or of another file's, is refused.
	clash, err := LoadFile(writeRecord(t, dir, "clash.yaml", "il-0587"))
	require.NoError(t, err)
	require.ErrorContains(t, Register(clash), "clash.yaml: id il-0587 is a built-in case record's")
	other, err := LoadFile(writeRecord(t, dir, "other.yaml", "my-0001"))
	require.NoError(t, err)
	require.ErrorContains(t, Register(other), "other.yaml: id my-0001 is already that of "+filepath.Join(dir, "mine.yaml"))

	ResetRegistered()
	_, err = Get("MY-0001")
	require.Error(t, err)
}

// A scenario's case: path.yaml is read by LoadFile with the path joined to
// the scenario's folder; Get finds it by the path as the scenario gives
// it, or reads the file when no scenario has.
func TestGetByPath(t *testing.T) {
	t.Cleanup(ResetRegistered)
	ResetRegistered()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "cases"), 0o755))
	path := writeRecord(t, filepath.Join(dir, "cases"), "my-outage.yaml", "MY-0002")

	_, err := LoadFile(path) // as the scenario loader does
	require.NoError(t, err)
	for _, ref := range []string{"cases/my-outage.yaml", "./cases/my-outage.yaml", "../cases/my-outage.yaml", path} {
		r, err := Get(ref)
		require.NoError(t, err, ref)
		require.Equal(t, "MY-0002", r.ID, ref)
	}

	ResetRegistered()
	r, err := Get(path)
	require.NoError(t, err, "read now")
	require.Equal(t, "MY-0002", r.ID)

	// Two files of the same name in two folders: a tail is ambiguous.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "b", "cases"), 0o755))
	_, err = LoadFile(writeRecord(t, filepath.Join(dir, "b", "cases"), "my-outage.yaml", "MY-0003"))
	require.NoError(t, err)
	_, err = Get("cases/my-outage.yaml")
	require.ErrorContains(t, err, "ambiguous")

	_, err = Get(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}

// The unknown-case error says how to give a record of one's own.
func TestGetUnknownCaseSaysHowToGiveOne(t *testing.T) {
	_, err := Get("ACME-1")
	require.ErrorContains(t, err, "--cases DIR")
	require.ErrorContains(t, err, "case: path.yaml")
	require.True(t, strings.HasPrefix(err.Error(), `seeds: unknown case "ACME-1" (known: AWS-EBS-2011, IL-0206`), err.Error())
}
