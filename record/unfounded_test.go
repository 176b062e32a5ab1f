package record

import (
	"strings"
	"testing"
)

// A client OOM-killed before the first fault, a workload not steady at
// the warm-up's end, servers unhealthy before the fault and a fault that
// did not land each make the variant's measurements unfounded, in words;
// an exit from the fault on and a person's action that missed do not.
func TestUnfounded(t *testing.T) {
	v := &VariantResult{
		Faults: []FaultWindow{
			{Fault: "pause", Start: 42.1, End: 57.1, Proofs: []Proof{{Target: "zk3", T: 42.2, Landed: Landed, Observed: "state paused"}}},
			{Fault: "pause", Start: 70, End: 71, Detail: ActionPrefix + "alice", Proofs: []Proof{{Target: "zk1", Landed: Missed, Observed: "gone"}}},
		},
		Steady: &SteadyState{Ready: 12, Total: 12, What: "mirrors fresh", Checked: true, Healthy: true},
	}
	v.Clients = []Instance{{ID: "client-01", Exits: []Exit{{T: 50, OOM: true}}}}
	if got := v.Unfounded(); len(got) != 0 {
		t.Fatalf("a steady variant whose fault landed: %q", got)
	}
	v.Clients = append(v.Clients, Instance{ID: "client-07", Exits: []Exit{{T: 18, OOM: true}}})
	v.Steady.Ready, v.Steady.Healthy = 11, false
	v.Faults[0].Proofs[0] = Proof{Target: "zk3", T: 42.2, Landed: Missed, Observed: "zk3 had already exited"}
	got := strings.Join(v.Unfounded(), "\n")
	for _, want := range []string{
		"the warm-up ended with 11 of 12 mirrors fresh",
		"the servers were not healthy before the first fault",
		"client-07 was OOM-killed at 18.0 s, before the first fault (at 42.1 s)",
		"pause did not land on zk3 at 42.2 s: zk3 had already exited",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "client-01") || strings.Contains(got, "zk1") {
		t.Errorf("an exit from the fault on, or an action, made it unfounded:\n%s", got)
	}
}

// Limits the placement could not enforce (no cgroup) leave a variant
// unfounded, whatever its figures: an OOM or thread-limit hypothesis
// could not have been violated.
func TestUnfoundedWithoutLimits(t *testing.T) {
	v := &VariantResult{Steady: &SteadyState{Ready: 4, Total: 4, Checked: true, Healthy: true}}
	if got := v.Unfounded(); len(got) != 0 {
		t.Fatalf("%q", got)
	}
	v.Unenforced = []string{"memory", "pids"}
	got := strings.Join(v.Unfounded(), "\n")
	if !strings.Contains(got, "the memory, pids limits the scenario sets were not enforced") || !strings.Contains(got, "run as root") {
		t.Fatalf("%q", got)
	}
}
