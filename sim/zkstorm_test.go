package sim

import (
	"testing"

	"github.com/chaoslab/chaoslab/reports"
)

func TestZKProbe(t *testing.T) {
	r, err := reports.Load("testdata/il-0587-report.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vulnerable", "mitigated"} {
		m, err := ZKFromReport(r, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", name, m)
		res := m.Run()
		sum := res.Summary()
		t.Logf("%s: %v %s metrics %v", name, sum.Outcome, sum.Why, sum.Metrics)
		for i := range res.T {
			if i%3 == 0 {
				t.Logf("t=%.0f alive=%.0f serving=%.0f fresh=%.0f out=%.0f pend=%.0f ooms=%.0f", res.T[i], res.Alive[i], res.Serving[i], res.Fresh[i], res.Outstanding[i], res.Pending[i], res.OOMs[i])
			}
		}
	}
}

func TestZKProbeIncident(t *testing.T) {
	for _, st := range []ZKStrategy{FullRefresh, Paced} {
		m := IncidentZK()
		m.Strategy = st
		res := m.Run()
		sum := res.Summary()
		t.Logf("%v: %v %s metrics %v", st, sum.Outcome, sum.Why, sum.Metrics)
		for i := range res.T {
			if i%30 == 0 {
				t.Logf("t=%.0fmin alive=%.0f serving=%.0f fresh=%.0f out=%.0f pend=%.0f ooms=%.0f", res.T[i]/60, res.Alive[i], res.Serving[i], res.Fresh[i], res.Outstanding[i], res.Pending[i], res.OOMs[i])
			}
		}
	}
}
