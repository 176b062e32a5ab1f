package labtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeepEnv names the folder where the run folders of failed tests are
// kept (scripts/test.sh sets it to out/test/failed); unset, nothing is
// kept.
const KeepEnv = "CHAOSLAB_KEEP_FAILED"

// RunDir is a folder for a test's run: its temporary folder, copied to
// $CHAOSLAB_KEEP_FAILED/<test name> when the test fails, so that a run
// that failed in CI can be read and re-judged afterwards (chaoslab
// check), not only its log.
func RunDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	keep := os.Getenv(KeepEnv)
	if keep == "" {
		return dir
	}
	// Registered after TempDir's own cleanup, so it runs before the
	// folder is removed.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dst := filepath.Join(keep, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
		if err := os.RemoveAll(dst); err != nil {
			t.Logf("labtest: keep the failed run: %v", err)
			return
		}
		if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
			t.Logf("labtest: keep the failed run: %v (kept in part)", err)
		}
		t.Logf("labtest: the failed test's run folders are kept in %s", dst)
	})
	return dir
}
