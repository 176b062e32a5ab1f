package sim

import (
	"math"
	"reflect"
	"testing"

	"github.com/chaoslab/chaoslab/reports"
	vf "github.com/chaoslab/chaoslab/verdict"
)

// The harness's agent tests replayed by the model from the measured
// calibration. The first kill, the 2x peak, the cached peak, the answers and
// the time down are fits; the kills under the back-off and the peak under
// GOMEMLIMIT (live heap = half the per-lookup charge) are predictions.
func TestGitLabDBAgainstAgentTests(t *testing.T) {
	m := HarnessGitLabDB(MeasuredGitLabDB())
	m.Pods, m.Procs, m.RolloutFor, m.SpikeAt, m.SpikeFor, m.Horizon = 1, 1, 0, 0, 25, 60
	m.Backoff.Max = MeasuredGitLabDB().BackoffMax
	r := m.Run()
	if r.OOMKills != 5 || r.Restarts != 5 {
		t.Fatalf("25 s of load under 100 MiB with back-off 1..8 s: %d kills, %d restarts, want 5 and 5 (harness)", r.OOMKills, r.Restarts)
	}
	if r.DownS < 23.6 || r.DownS > 23.7 {
		t.Fatalf("down %.2f s, harness 23.6-23.7 s", r.DownS)
	}
	if r.FirstKillS < 0.35 || r.FirstKillS > 0.4 {
		t.Fatalf("first kill %.3f s after the load, harness 0.35-0.4 s", r.FirstKillS)
	}
	for _, c := range []struct {
		name   string
		lo, hi float64
	}{{"mitigated-2x-limit", 152, 156}, {"mitigated-gomemlimit", 87, 92}, {"mitigated-dns-cache", 48, 55}} {
		v, err := m.Variant(c.name)
		if err != nil {
			t.Fatal(err)
		}
		r := v.Run()
		if r.OOMKills != 0 || r.PeakMemMB < c.lo || r.PeakMemMB > c.hi {
			t.Errorf("%s: %d kills, peak %.1f MiB; harness 0 kills, %g-%g MiB", c.name, r.OOMKills, r.PeakMemMB, c.lo, c.hi)
		}
	}
	if _, err := m.Variant("bogus"); err == nil {
		t.Fatal("an unknown variant is an error")
	}
}

// At GitLab's scale the vulnerable fleet's agents are killed again and
// again, its reads move to the primary and it saturates; the limit, the
// soft limit and the DNS cache keep every agent alive. The later discovery
// code alone closes the empty-answer path but not the boot path.
func TestGitLabDBIncidentScale(t *testing.T) {
	base := IncidentGitLabDB()
	vul := base.Run()
	if vul.OOMKills < 2*base.Pods || vul.PeakShare < 0.9 || vul.PeakUtil < 1 || vul.SaturatedS < 3600 {
		t.Fatalf("vulnerable: %d kills, primary share %.2f, utilisation %.2f, saturated %.0f s", vul.OOMKills, vul.PeakShare, vul.PeakUtil, vul.SaturatedS)
	}
	if vul.RecoveredS > base.QuickRecovery {
		t.Fatalf("vulnerable: recovered %.0f s after the spike, want within %.0f s (back-off cap + a discovery interval)", vul.RecoveredS, base.QuickRecovery)
	}
	for _, name := range []string{"mitigated-2x-limit", "mitigated-gomemlimit", "mitigated-dns-cache"} {
		m, _ := base.Variant(name)
		r := m.Run()
		if r.OOMKills != 0 || r.PeakShare != 0 || r.SaturatedS != 0 {
			t.Errorf("%s: %d kills, primary share %.2f, saturated %.0f s", name, r.OOMKills, r.PeakShare, r.SaturatedS)
		}
	}
	noBoots := base
	noBoots.RolloutFor = 0
	old, later := noBoots.Run(), noBoots.WithLaterDiscovery().Run()
	if old.PeakShare < 0.05 || later.PeakShare != 0 {
		t.Fatalf("no worker boots: primary share %.3f (2022) and %.3f (later code), want > 0.05 and 0", old.PeakShare, later.PeakShare)
	}
}

func TestGitLabDBDeterministic(t *testing.T) {
	m := HarnessGitLabDB(MeasuredGitLabDB())
	a, b := m.Run(), m.Run()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two runs")
	}
	m.Seed = 2
	if c := m.Run(); reflect.DeepEqual(a.PrimaryShare, c.PrimaryShare) {
		t.Fatal("another seed gave the same run")
	}
}

func TestGitLabDBFromReport(t *testing.T) {
	_, err := GitLabDBFromReport(&reports.Report{RunID: "x", Scenario: &reports.ScenarioInfo{ID: "il-0587-zk-treecache-reconnect-storm"}})
	if err == nil {
		t.Fatal("a report of another scenario is an error")
	}
	v := &reports.VariantResult{Name: "mitigated-2x-limit"}
	v.Metrics = map[string]vf.Float{"agents.memory_peak_mb": 160}
	r := &reports.Report{RunID: "y", Scenario: &reports.ScenarioInfo{ID: "il-0206-consul-agent-oom"}, Variants: []*reports.VariantResult{v}}
	c, err := GitLabDBFromReport(r)
	if err != nil || c.PeakMB != 160 || c.FirstKillS != MeasuredGitLabDB().FirstKillS || c.JoinS != MeasuredGitLabDB().JoinS {
		t.Fatalf("calibration %+v, %v", c, err)
	}
	vul := &reports.VariantResult{Name: "vulnerable"}
	vul.Metrics = map[string]vf.Float{"pods.lookups_empty": 12, "agents.restarts": 39}
	r.Variants = append(r.Variants, vul)
	c, err = GitLabDBFromReport(r)
	if err != nil || math.Abs(c.JoinS-12*3.25/(39*4)) > 1e-9 {
		t.Fatalf("join window %.3f s from 12 empty answers over 39 restarts, want %.3f", c.JoinS, 12*3.25/(39*4))
	}
}
