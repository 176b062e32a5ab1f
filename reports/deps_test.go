package reports

import (
	"os/exec"
	"strings"
	"testing"
)

// The record, its judgement and its rendering compile without the lab:
// nothing under harness/, nor the scenario loader (which links every
// plug-in), so that a report is judged and drawn from its record alone.
func TestRecordJudgementRenderingStandAlone(t *testing.T) {
	for _, pkg := range []string{"verdict", "record", "reports"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/chaoslab/chaoslab/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/chaoslab/chaoslab/harness/") || dep == "github.com/chaoslab/chaoslab/scenarios" {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
