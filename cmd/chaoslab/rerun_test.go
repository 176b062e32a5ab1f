package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A report's rerun names a scenario of the user's by its file (its id is
// not found among the built-in ones), with the --cases it was run with.
func TestRerunRef(t *testing.T) {
	file := filepath.Join(t.TempDir(), "my scenario.yaml")
	require.NoError(t, os.WriteFile(file, []byte("id: mine\n"), 0o644))
	require.Equal(t, "il-0587-zk-treecache-reconnect-storm", rerunRef("IL-0587", "il-0587-zk-treecache-reconnect-storm"))
	require.Equal(t, `"`+file+`"`, rerunRef(file, "mine"))
	userCases = "cases/"
	t.Cleanup(func() { userCases = "" })
	require.Equal(t, `--cases "cases/" mine`, rerunRef("mine", "mine"))
	require.Equal(t, "chaoslab run --cases \"cases/\" mine --seed 3", rerunCommand(rerunRef("mine", "mine"), 3, runFlags{}))
}
