package cases

import (
	"fmt"
	"math"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/sim"
	"github.com/chaoslab/chaoslab/verdict"
)

// gitlabAgree is the factor within which the model at the harness's scale
// must agree with a harness run's figures of the same name (--calibrate).
const gitlabAgree = 2

// gitlabCompared are the figures compared with a harness run of IL-0206
// when its report carries them under the model's names and variants.
var gitlabCompared = []string{"agents.oom_kills", "app.primary_read_share.during_faults", "app.read_p99_ms.during_faults",
	"app.error_rate.during_faults", "app.processes_without_replicas.max", "pods.lookups_empty", "pods.lookups_failed"}

var gitlabDescs = map[string]string{
	"vulnerable":           "GitLab.com in April 2022: a Consul agent per pod under a 500 MB limit, OOM-killed by its memory spike and restarted with the kubelet's back-off; the 2022 load balancer (an empty answer empties the host list; a worker that boots while its agent is down has none), every read without a list at the primary.",
	"mitigated-later-code": "The later load-balancer code: an empty answer keeps the list, retries up to 3 times with jitter. The agents are still killed, and a worker that boots during the loop still has no list.",
	"mitigated-2x-limit":   "The temporary fix: the pod limit doubled (500 MB to 1 GB).",
	"mitigated-gomemlimit": "Not tried in the write-up: GOMEMLIMIT at 80% of the same 500 MB limit, so the agent's collector works harder instead of the kernel killing it.",
	"mitigated-dns-cache":  "Not tried in the write-up: dns_config { use_cache = true }, the lookups share one cached reply.",
}

func init() {
	register(&Case{
		ID:         "il-0206",
		Aliases:    []string{"gitlab", sim.HarnessScenario},
		Model:      "sim/gitlabdb.go",
		Scenario:   sim.HarnessScenario,
		Title:      "Consul agents OOM-killed in every GitLab.com pod; Rails loses replica discovery and saturates the primary",
		Scales:     []string{ScaleIncident, ScaleHarness},
		Variants:   gitlabVariants,
		Hypotheses: gitlabHypotheses,
		ExpectAt: func(scale string) map[string]verdict.Verdict {
			// At GitLab's scale a deploy boots workers while the agents
			// crash-loop, which the later code does not help; the harness
			// boots none.
			later := verdict.Violated
			if scale == ScaleHarness {
				later = verdict.Held
			}
			return map[string]verdict.Verdict{
				"vulnerable": verdict.Violated, "mitigated-later-code": later,
				"mitigated-2x-limit": verdict.Held, "mitigated-gomemlimit": verdict.Held, "mitigated-dns-cache": verdict.Held,
			}
		},
		Incident: gitlabIncident,
	})
}

// gitlabHypotheses: at the harness's scale those of the scenario
// (sim.HarnessScenario; written out here while the scenario cannot be
// loaded); at GitLab's, the same read share with the primary's p99 and
// saturation.
func gitlabHypotheses(scale string) []scenarios.Hypothesis {
	if s := atHarness(scale, sim.HarnessScenario); s != nil {
		return s.Spec().Hypotheses
	}
	share := scenarios.Hypothesis{ID: "reads-on-replicas", Description: "While the trigger lasts, at most 20% of the app's reads go to the primary.",
		Metric: "app.primary_read_share.during_faults", Op: "<=", Threshold: 0.2}
	if scale == ScaleHarness {
		return []scenarios.Hypothesis{share, {ID: "read-p99", Description: "While the trigger lasts, the app's reads take at most 200 ms at the 99th percentile.",
			Metric: "app.read_p99_ms.during_faults", Op: "<=", Threshold: 200}}
	}
	return []scenarios.Hypothesis{share,
		{ID: "primary-p99", Description: "The primary's query latency p99 stays under 100 ms.", Metric: "primary.latency_p99_ms.peak", Op: "<=", Threshold: 100},
		{ID: "primary-unsaturated", Description: "The primary is never offered more than it can serve.", Metric: "primary.saturated_s", Op: "==", Threshold: 0},
	}
}

func gitlabVariants(o Options) ([]Variant, error) {
	base := sim.IncidentGitLabDB()
	var hr *reports.Report
	if o.Scale == ScaleHarness {
		c := sim.MeasuredGitLabDB()
		if o.Calibrate != "" {
			r, err := reports.Load(o.Calibrate)
			if err != nil {
				return nil, fmt.Errorf("calibrate: %w", err)
			}
			if c, err = sim.GitLabDBFromReport(r); err != nil {
				return nil, err
			}
			hr = r
		}
		base = sim.HarnessGitLabDB(c)
	}
	base.Seed = o.Seed
	var out []Variant
	for _, name := range sim.GitLabDBVariants {
		m, err := base.Variant(name)
		if err != nil {
			return nil, err
		}
		out = append(out, gitlabVariant(name, m, o.Scale, hr))
	}
	return out, nil
}

func gitlabVariant(name string, m sim.GitLabDB, scale string, hr *reports.Report) Variant {
	run := func() sim.Result {
		res := m.Run().Summary(m.QuickRecovery)
		if scale == ScaleHarness {
			gitlabHarnessTests(res.Metrics, m)
		}
		if hr != nil {
			res = withHarness(res, hr.Variant(name), gitlabCompared)
		}
		return res
	}
	return Variant{Name: name, Description: gitlabDescs[name], Parameters: gitlabParams(m), Run: run,
		Faults: []reports.FaultWindow{{Fault: "memory-spike", Target: "agents", Member: fmt.Sprintf("%d lookups in flight at every agent", m.Lookers),
			Start: m.SpikeAt, End: m.SpikeAt + m.SpikeFor, Detail: "uncached DNS lookups, each holding its own decoded copy of the service's health"}}}
}

// gitlabHarnessTests adds the model's figures for the harness's agent tests
// (harness/kinds/dblb/consulload): one agent under the variant's limit and the load
// for 20 s without restarts (TestIntegration_AgentOOMKilledByLookups), and
// for 25 s with the back-off (TestIntegration_AgentRestartedAfterOOMKill).
func gitlabHarnessTests(met map[string]float64, m sim.GitLabDB) {
	one := m
	one.Pods, one.Procs, one.RolloutFor, one.SpikeAt, one.Horizon = 1, 1, 0, 0, 20
	one.Backoff = sim.Backoff{Base: 1e9}
	c := sim.MeasuredGitLabDB()
	r := one.Run()
	met["test.oom.memory_peak_mb"] = r.PeakMemMB
	met["test.oom.first_kill_s"] = r.FirstKillS
	met["test.oom.answers_20s"] = r.SpikeAnswers
	rs := m
	rs.Pods, rs.Procs, rs.RolloutFor, rs.SpikeAt, rs.SpikeFor, rs.Horizon = 1, 1, 0, 0, 25, 60
	rs.Backoff = sim.Backoff{Base: c.BackoffBase, Factor: 2, Max: c.BackoffMax}
	r = rs.Run()
	met["test.restart.oom_kills"] = float64(r.OOMKills)
	met["test.restart.down_s"] = r.DownS
}

func gitlabParams(m sim.GitLabDB) []reports.Parameter {
	mem := fmt.Sprintf("idle %.0f MB, +%.1f MB per lookup in flight; killed at %.0f MB", m.BaseMB, m.PerLookupMB, m.LimitMB)
	switch {
	case m.UseCache:
		mem += fmt.Sprintf("; dns use_cache: one cached reply (%.0f MB) shared", m.CacheMB)
	case m.SoftLimitMB > 0:
		mem += fmt.Sprintf("; GOMEMLIMIT %.0f MB (lookup rate ×%.2f when it binds)", m.SoftLimitMB, m.SoftLimitRate)
	}
	return []reports.Parameter{
		{Name: "Pods", Value: fmt.Sprintf("%d, each one Consul agent and %d Rails workers", m.Pods, m.Procs)},
		{Name: "Agent memory", Value: mem},
		{Name: "Trigger", Value: fmt.Sprintf("%d uncached DNS lookups in flight at every agent from %s for %s (memory grows %.0f MB/s)", m.Lookers, clock(m.SpikeAt), clock(m.SpikeFor), m.GrowthMBps)},
		{Name: "Restart", Value: fmt.Sprintf("back-off %.0f s doubling to %.0f s (reset after %.0f s up); listening %.2f s later, joined %.2f s after that", m.Backoff.Base, m.Backoff.Max, 2*m.Backoff.Max, m.RestartLatency, m.SyncTime)},
		{Name: "Discovery", Value: fmt.Sprintf("%s; every %.0f s + U(0, %.0f s) and at boot", m.Discovery, m.Interval, m.Jitter)},
		{Name: "Worker boots", Value: fmt.Sprintf("every worker once between %s and %s (a deploy)", clock(m.RolloutAt), clock(m.RolloutAt+m.RolloutFor))},
		{Name: "Databases", Value: fmt.Sprintf("primary %d cores, %.0f queries/s, %.0f writes/s, pool %.0f, timeout %.0f s; %d replicas of %.0f queries/s; %.0f reads/s per worker",
			m.Cores, m.PrimaryRate, m.WriteRate, m.PoolSize, m.QueryTimeout, m.Replicas, m.ReplicaRate, m.ReadRate)},
		{Name: "Horizon", Value: clock(m.Horizon)},
		{Name: "Seed", Value: fmt.Sprint(m.Seed)},
	}
}

// gitlabIncident compares the runs with the write-up at GitLab's scale, and
// with the harness's measurements at the harness's.
func gitlabIncident(res map[string]sim.Result) []reports.IncidentRow {
	if _, ok := res["vulnerable"].Metrics["test.oom.memory_peak_mb"]; ok {
		rows := gitlabAgainstTests(res)
		if more, ok := againstHarness(res, gitlabCompared, gitlabAgree); ok {
			rows = append(rows, more...)
		}
		return rows
	}
	var rows []reports.IncidentRow
	if r, ok := res["vulnerable"]; ok {
		rows = append(rows, gitlabVulnerableRows(r)...)
	}
	if r, ok := res["mitigated-2x-limit"]; ok {
		row, _ := publishedRow("il-0206", "pod_memory_limit_after", "agents.oom_kills", "mitigated-2x-limit", "kills")
		row.Note = "agreement: no agent killed under 1 GB during the same spike (the write-up planned to watch whether it holds)"
		rows = append(rows, band(row, r.Metrics["agents.oom_kills"], 0, 0))
	}
	return rows
}

func gitlabVulnerableRows(r sim.Result) []reports.IncidentRow {
	kills, _ := publishedRow("il-0206", "pod_memory_limit_before", "agents.oom_kills_per_agent.mean", "vulnerable", "kills per agent")
	kills.Incident += " Killed \"rapidly and repeatedly\"."
	kills.Note = "compared: at least 2 kills per agent over the spike (the write-up gives no count)"
	sat, n := publishedRow("il-0206", "declared_to_mitigated", "primary.saturated_s", "vulnerable", "min")
	sat.Note = "band ×0.5 to ×2. The spike's length (150 min) is the model's input, so this checks only the lags: saturation comes with the worker boots, and ends within minutes of the spike"
	return []reports.IncidentRow{
		band(kills, r.Metrics["agents.oom_kills_per_agent.mean"], 2, math.Inf(1)),
		band(reports.IncidentRow{
			Incident:  "Without answers the Rails pods (web, api, git, websockets) sent all their queries to the last known primary.",
			Published: "all their queries (no share published)", Metric: "reads.primary_share.peak", Variant: "vulnerable", Unit: "of the reads",
			Note: "compared: most reads (≥ 50%) at the primary at the worst moment",
		}, r.Metrics["reads.primary_share.peak"], 0.5, 1),
		band(reports.IncidentRow{
			Incident:  "The primary saturated; Sidekiq and the whole site slowed down.",
			Published: "saturated (no figure)", Metric: "primary.utilisation.peak", Variant: "vulnerable", Unit: "offered/capacity",
			Note: "compared: offered load at least the primary's capacity",
		}, r.Metrics["primary.utilisation.peak"], 1, math.Inf(1)),
		band(sat, r.Metrics["primary.saturated_s"]/60, n.Value/2, 2*n.Value),
		band(reports.IncidentRow{
			Incident:  "The first hypothesis: the pgbouncer pool reduction had saturated database connections.",
			Published: "connection saturation (the misleading signal)", Metric: "primary.pool_saturated_s", Variant: "vulnerable", Unit: "min",
			Note: "compared: the primary's server connections at the pool's size for at least 10 min; in the model they fill only because the primary's CPU is saturated by the reads",
		}, r.Metrics["primary.pool_saturated_s"]/60, 10, math.Inf(1)),
	}
}

// gitlabTests are the harness's agent measurements (harness/kinds/dblb/consulload):
// variant, the model's metric, the measured range and what was measured.
var gitlabTests = []struct {
	variant, metric string
	lo, hi          float64
	text            string
}{
	{"vulnerable", "test.oom.first_kill_s", 0.35, 0.4, "OOM kill under 100 MiB after the load starts (3 runs)"},
	{"mitigated-2x-limit", "test.oom.memory_peak_mb", 152, 156, "peak charged under 200 MiB, survives (3 runs)"},
	{"mitigated-gomemlimit", "test.oom.memory_peak_mb", 87, 92, "peak charged with GOMEMLIMIT=80MiB under 100 MiB, survives (3 runs)"},
	{"mitigated-dns-cache", "test.oom.memory_peak_mb", 48, 55, "peak charged with use_cache, 25 to 100 lookers"},
	{"mitigated-2x-limit", "test.oom.answers_20s", 986, 1203, "lookups answered in 20 s under 200 MiB"},
	{"mitigated-gomemlimit", "test.oom.answers_20s", 780, 913, "lookups answered in 20 s with GOMEMLIMIT=80MiB"},
	{"vulnerable", "test.restart.oom_kills", 5, 5, "OOM kills in 25 s of load, restarted after 1, 2, 4, 8, 8 s"},
	{"vulnerable", "test.restart.down_s", 23.6, 23.7, "time down in those 25 s (2 runs)"},
}

func gitlabAgainstTests(res map[string]sim.Result) []reports.IncidentRow {
	var rows []reports.IncidentRow
	for _, t := range gitlabTests {
		r, ok := res[t.variant]
		if !ok {
			continue
		}
		rows = append(rows, band(reports.IncidentRow{
			Incident: "Harness measurement (harness/kinds/dblb/consulload): " + t.text + ".", Published: fmt.Sprintf("%g-%g", t.lo, t.hi),
			Metric: t.metric, Variant: t.variant, Against: "harness run",
			Note: "agreement: within the measured range ±10%",
		}, r.Metrics[t.metric], 0.9*t.lo, 1.1*t.hi))
	}
	return rows
}
