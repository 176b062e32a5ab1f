// Package mytests is what a repository of yours holds to test its own
// client under an incident with chaoslab's labtest: a module that knows
// chaoslab only as a library (github.com/chaoslab/chaoslab/harness/labtest).
// Run it as root (cgroups hold the client to the incident's limits), with
// a chaoslab built by scripts/setup.sh on PATH (or CHAOSLAB_BINARY): it is
// skipped, with the reason, where it cannot run.
package mytests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chaoslab/chaoslab/harness/labtest"
)

// TestMyClientSurvivesIL0587 builds the client (here the paced Go example)
// and replays IL-0587's leader stall against it at the ci size.
func TestMyClientSurvivesIL0587(t *testing.T) {
	if testing.Short() {
		t.Skip("replays an incident: minutes (skipped with -short)")
	}
	bin := filepath.Join(t.TempDir(), "my-client")
	build := exec.Command("go", "build", "-C", "../zk-paced-go", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the client: %v\n%s", err, out)
	}
	r := labtest.Run(t, "il-0587-zk-treecache-reconnect-storm",
		labtest.Client(bin), labtest.Size("ci"), labtest.Seed(1))
	if r != nil {
		t.Logf("report: %s", filepath.Join(r.Dir, "index.html"))
	}
}
