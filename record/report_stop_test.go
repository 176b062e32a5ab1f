package record

import (
	"strings"
	"testing"
)

// A fault the emergency stop ended leaves the variant undecided, with the
// reason; an action it ended too.
func TestEmergencyStopIsUnfounded(t *testing.T) {
	v := &VariantResult{Faults: []FaultWindow{{Fault: "pause", Member: "zk1", Start: 40, End: 47.5, Detail: EmergencyStopDetail}}}
	got := strings.Join(v.Unfounded(), "; ")
	if !strings.Contains(got, "the facilitator's emergency stop ended pause on zk1 at 47.5 s") {
		t.Fatalf("unfounded: %q", got)
	}
	v = &VariantResult{Faults: []FaultWindow{{Fault: "pause", Member: "zk1", Start: 40, End: 55}}}
	if len(v.Unfounded()) != 0 {
		t.Fatalf("a fault that ran its course: %q", v.Unfounded())
	}
}
