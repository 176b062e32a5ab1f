package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet"
	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	vd "github.com/chaoslab/chaoslab/verdict"
)

// il0384Report is the harness's replay of IL-0384 on real etcd
// (`chaoslab run il-0384-kinesis-thread-per-peer --backend local --seed
// 1`, 2026-11-30), its report.json with the per-server thread series left
// out and the per-server routing series cut to the warm-up and the
// restart's first 20 s (the calibration times the servers' starts on them;
// every other figure comes from the fleet's series, metrics, events and
// fault windows, kept unchanged): 1.1 MB of 3.6.
const il0384Report = "testdata/il-0384-report.json"

// kinesisAgree is how far apart the model and the harness may be on the
// recovery time after the restart: a factor of 2, and "never" only
// against "never". Both are counted in whole seconds of the run's clock
// (KinesisRecovery), so the mitigated restart's 2-3 s moves by a third
// with where a second boundary falls; the harness first stops every
// server (0.3-1.1 s in the reference run) where the model restarts them
// at once; its earlier run took 4.98 s where this one took 2.98 s; and
// the model is calibrated on medians of a cold start and of that restart.
// The verdicts are asserted on their own (every hypothesis and comparison
// the same), so the factor is not what keeps them: the slow restart's
// 42 s sits 1.7 times under the 70 s threshold and must stay under it.
const kinesisAgree = 2.0

func kinesisWithin(sim, harness, factor float64) bool {
	if math.IsInf(sim, 1) || math.IsInf(harness, 1) {
		return math.IsInf(sim, 1) && math.IsInf(harness, 1)
	}
	if sim <= 0 || harness <= 0 {
		return sim == harness
	}
	r := sim / harness
	return r <= factor && r >= 1/factor
}

// ksFigures are the figures compared, as the scenario's metrics.
type ksFigures struct {
	metrics         map[string]float64
	removalsRestart float64 // health-check removals from the restart on
	overLimit       float64 // servers over the thread limit (model), aborts at it (harness)
}

func ksHarnessFigures(v *reports.VariantResult) ksFigures {
	f := ksFigures{metrics: map[string]float64{}}
	for k, x := range v.Metrics {
		f.metrics[k] = float64(x)
	}
	restart := ksFault(v, "restart-fleet")
	for _, e := range v.Events {
		if e.Kind == "removed" && restart != nil && e.T >= restart.Start {
			f.removalsRestart++
		}
	}
	f.overLimit = f.metrics["fleet.thread_limit_exits"]
	return f
}

// ksModelFigures runs the model and reads its figures the way the harness
// reads its own: the worst routing once every server has learned of the
// new capacity until it is removed (the model has no per-server series:
// the share of the original servers routing at its worst sample), threads
// against the limit, and the recovery after the restart (KinesisRecovery).
func ksModelFigures(m Kinesis) (ksFigures, KinesisResult) {
	r := m.Run()
	f := ksFigures{metrics: KinesisHarnessMetrics(m, r)}
	pre := m
	pre.Horizon = m.RestartAt
	f.removalsRestart = float64(r.Removals - pre.Run().Removals)
	f.overLimit = float64(r.OverLimit)
	return f, r
}

// kinesisKnownMiss: where the calibrated model and the reference run
// disagree, and why. Restarted all at once, the vulnerable fleet never
// came back in the harness (288 removals): its servers lost their
// shard-maps again each time a peer's full map arrived, and CPU-starved
// servers missed health checks even in their grace period. In the model a
// server that routes keeps routing while it takes in peers' maps (it is
// judged only on how much work it has queued), and a server in its grace
// period is never judged slow; so the calibrated model's servers finish
// the cascade of 31 maps 10.7 s after the restart, just before the health
// check would remove them (grace 6 s + 5 failed checks), and the fleet is
// back after one removal. The model is at its tipping point there: 10%
// more per map (the cold start's 38.2 ms against 4 × the benchmark's
// 9.1-10.3 ms: within the calibration's error) and it never comes back
// either. The test asserts that, so that the miss stays a near miss.
var kinesisKnownMiss = map[string]bool{
	"vulnerable/restart-recovers":              true,
	"comparison/fast-restart-slower-than-slow": true,
}

// kinesisTipping is how much more per map turns the known miss around.
const kinesisTipping = 1.1

func TestKinesisAgreesWithHarness(t *testing.T) {
	if _, err := os.Stat(il0384Report); errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s: no harness report of IL-0384 to compare with", il0384Report)
	}
	r, err := reports.Load(il0384Report)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.OfRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if v := r.Variant("vulnerable"); v != nil {
		fl, err := ksFleet(v)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ksCalibrateCosts(r, fl)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cold start: %d servers bootstrapping from peers: %.1f ms per ready peer + %.2f s; %d from the store: %.2f s + %.1f ms per cell peer; all-at-once restart of %s: launch to routing median %.2f s = %.1f × the cold start's",
			c.peerPoints, 1000*c.decode, c.peerStart, c.storeAt, c.storeStart, 1000*c.digest, c.slowdownFrom, ksMedian(c.restartDelay), c.slowdown)
	}
	harness, model := map[string]map[string]float64{}, map[string]map[string]float64{}
	misses := 0
	for _, name := range []string{"vulnerable", "vulnerable-slow-restart", "mitigated"} {
		v := r.Variant(name)
		if v == nil {
			t.Fatalf("the report has no variant %s", name)
		}
		m, err := KinesisFromReport(r, name)
		if err != nil {
			t.Fatal(err)
		}
		h := ksHarnessFigures(v)
		g, _ := ksModelFigures(m)
		harness[name], model[name] = h.metrics, g.metrics
		t.Logf("%s: calibrated: %d+%d servers, limit %d, base threads %d, per-peer %v, pool %d, cells %d, from store %v; decode %.4f s, encode %.4f s, digest %.4f s, store %.3f s of a server's quota; load %.2f; add %.1f-%.1f s, restart %.1f s at %g/s, horizon %.1f s",
			name, m.Servers, m.Added, m.ThreadLimit, m.BaseThreads, m.PerPeer, m.PoolThreads, m.CellSize, m.FromStore,
			m.DecodeCost, m.EncodeCost, m.DigestCost, m.StoreCost, m.Load, m.AddAt, m.RemoveAt, m.RestartAt, m.RestartRate, m.Horizon)
		row := func(what string, hv, mv float64) {
			t.Logf("%s: %-44s harness %-8s model %s", name, what, vd.FormatValue(hv), vd.FormatValue(mv))
		}
		row("threads before the addition (max)", h.metrics["fleet.threads.before_trigger_max"], float64(m.BaseThreads+ksThreadsOf(m)))
		row("threads (max; model: what a server needs)", h.metrics["fleet.threads.max"], g.metrics["fleet.threads.max"])
		row("thread-limit aborts / servers over it", h.overLimit, g.overLimit)
		row("worst routing after the addition", h.metrics["fleet.routing_success.min_server_after_trigger"], g.metrics["fleet.routing_success.min_server_after_trigger"])
		row("best routing after the addition", h.metrics["fleet.routing_success.max_server_after_trigger"], g.metrics["fleet.routing_success.max_server_after_trigger"])
		row("health removals (whole run)", h.metrics["fleet.health_removals"], g.metrics["fleet.health_removals"])
		row("health removals from the restart", h.removalsRestart, g.removalsRestart)
		row("recovery after the restart (s)", h.metrics["fleet.recovery_after_restart_s"], g.metrics["fleet.recovery_after_restart_s"])

		hc, hv, _ := vd.Hypotheses(s.Hypotheses, h.metrics)
		mc, mv, mwhy := vd.Hypotheses(s.Hypotheses, g.metrics)
		t.Logf("%s: verdict harness %s, model %s (%s)", name, hv, mv, mwhy)
		missed := false
		for i := range hc {
			if hc[i].Held == mc[i].Held && hc[i].Missing == mc[i].Missing {
				continue
			}
			if kinesisKnownMiss[name+"/"+hc[i].ID] {
				t.Logf("%s: %s: KNOWN DISAGREEMENT: harness %s; model %s", name, hc[i].ID, hc[i], mc[i])
				missed = true
				continue
			}
			t.Errorf("%s: %s: harness %s, model %s", name, hc[i].ID, hc[i], mc[i])
		}
		if exp := s.Expect[name]; string(mv) != exp {
			t.Errorf("%s: model's verdict %s, the scenario expects %s", name, mv, exp)
		}
		hr, mr := h.metrics["fleet.recovery_after_restart_s"], g.metrics["fleet.recovery_after_restart_s"]
		if !kinesisWithin(mr, hr, kinesisAgree) && !missed {
			t.Errorf("%s: recovery after the restart: model %s s, harness %s s (want within %gx)", name, vd.FormatValue(mr), vd.FormatValue(hr), kinesisAgree)
		}
		if missed {
			misses++
			// A near miss: the model recovered only through removals,
			// and a little more per map keeps it down.
			tip := m
			tip.DecodeCost *= kinesisTipping
			tip.EncodeCost *= kinesisTipping
			f, _ := ksModelFigures(tip)
			t.Logf("%s: with %.0f%% more per map the model: recovery %s, %v removals from the restart (harness: %s, %v)", name, 100*(kinesisTipping-1),
				vd.FormatValue(f.metrics["fleet.recovery_after_restart_s"]), f.removalsRestart, vd.FormatValue(hr), h.removalsRestart)
			if g.removalsRestart < 1 || !kinesisWithin(f.metrics["fleet.recovery_after_restart_s"], hr, kinesisAgree) {
				t.Errorf("%s: the known disagreement is no longer a near miss: model recovery %s s after %v removals, %s s with %.0f%% more per map; harness %s s",
					name, vd.FormatValue(mr), g.removalsRestart, vd.FormatValue(f.metrics["fleet.recovery_after_restart_s"]), 100*(kinesisTipping-1), vd.FormatValue(hr))
			}
		}
		switch name {
		case "vulnerable", "vulnerable-slow-restart":
			if g.overLimit < float64(m.Servers) {
				t.Errorf("%s: %v servers over the thread limit in the model, want every original", name, g.overLimit)
			}
		case "mitigated":
			if g.overLimit != 0 {
				t.Errorf("%s: %v servers over the thread limit in the model", name, g.overLimit)
			}
		}
	}
	for _, c := range s.Comparisons {
		hc, mc := vd.JudgeComparison(c, harness), vd.JudgeComparison(c, model)
		switch {
		case hc.Held == mc.Held:
			t.Logf("comparison %s: harness %s; model %s", c.ID, hc, mc)
		case kinesisKnownMiss["comparison/"+c.ID]:
			t.Logf("comparison %s: KNOWN DISAGREEMENT (follows from the vulnerable restart): harness %s; model %s", c.ID, hc, mc)
		default:
			t.Errorf("comparison %s: harness %s, model %s", c.ID, hc, mc)
		}
	}
	if misses == 0 {
		t.Logf("no known disagreement left: update kinesisKnownMiss")
	}
	t.Logf("three variants calibrated and run in %s", time.Since(start).Round(time.Millisecond))
}

// ksThreadsOf is the threads a server needs besides the base before the
// addition.
func ksThreadsOf(m Kinesis) int {
	if m.PerPeer {
		return ksCellPeers(m.Servers, m.CellSize)
	}
	return m.PoolThreads
}

// ksSynthetic is a made-up harness report of the IL-0384 scenario with
// known costs: a cold start one server every 1.5 s, each routing
// peerStart + decode×(ready peers) after its start (bootstrapping from
// peers; the first waits the 3 s bootstrap timeout and reads the store
// in storeStart), or storeStart + digest×(ready peers of its cell) (from
// the store).
func ksSynthetic(decode, digest, peerStart, storeStart float64) *reports.Report {
	d := func(s float64) scenarios.Duration { return scenarios.Duration(time.Duration(s * float64(time.Second))) }
	fl := fleet.Settings{
		Servers: 32, AddFraction: 0.1, ThreadLimit: 40, CPUQuota: 0.25,
		Settings: frontend.Settings{PeerThreads: "per-peer", Bootstrap: "peers", BootstrapTimeout: d(3), LearnSpread: d(8), Heartbeat: d(1), LeaseTTL: d(10)},
		Shards:   4000, RequestRate: 200, MaxInFlight: 64, StartSpread: d(48),
		HealthGrace: d(6), HealthTimeout: d(1), HealthFailures: 5, GoMaxProcs: 1,
	}
	sc := &scenarios.Scenario{
		ID: "il-0384-kinesis-thread-per-peer", Case: "IL-0384", System: "etcd",
		Timeline: scenarios.Timeline{Warmup: d(62), Observe: d(15), Faults: []scenarios.FaultStep{
			{At: 0, Fault: "add-capacity", Target: "fleet", Duration: d(30)},
			{At: d(40), Fault: "restart-fleet", Target: "fleet", Duration: d(80)},
		}},
		Variants: map[string]scenarios.Variant{"vulnerable": {}, "vulnerable-slow-restart": {}, "mitigated": {}},
	}
	r := &reports.Report{Schema: reports.SchemaVersion, Scenario: sc.Info(), Seed: 1, Host: reports.Host{Cores: 2}}
	mk := func(name string, f fleet.Settings, before float64) *reports.VariantResult {
		v := &reports.VariantResult{Name: name, Workload: lab.Encode(map[string]any{"kind": fleet.KindName, "settings": f}),
			Faults: []reports.FaultWindow{
				{Fault: "add-capacity", Target: "fleet", Member: "fleet", Start: 62.2, End: 92.3},
				{Fault: "restart-fleet", Target: "fleet", Member: "fleet", Start: 102.2, End: 182.2},
			}}
		v.Metrics = map[string]vd.Float{"fleet.threads.before_trigger_max": vd.Float(before)}
		ready := make([]float64, f.Servers)
		for i := range f.Servers {
			id := fmt.Sprintf("fe-%02d", i+1)
			start := 0.3 + 1.5*float64(i)
			v.Events = append(v.Events, reports.Event{T: start, Kind: "server-start", Source: id, Detail: "started (incarnation 0)"})
			k := 0
			for j := range i {
				if (f.CellSize == 0 || j/f.CellSize == i/f.CellSize) && ready[j] <= start {
					k++
				}
			}
			switch {
			case f.Bootstrap == "store":
				ready[i] = start + storeStart + digest*float64(k)
			case k == 0:
				ready[i] = start + 3 + storeStart
			default:
				ready[i] = start + peerStart + decode*float64(k)
			}
			sr := v.SeriesFor("server.routing_success", id, "share")
			for sec := 0; sec < 62; sec++ {
				x := math.Min(math.Max(float64(sec+1)-ready[i], 0), 1)
				sr.Points = append(sr.Points, reports.Point{T: float64(sec) + 0.5, V: vd.Float(x)})
			}
		}
		fs := v.SeriesFor("fleet.routing_success", "fleet", "share")
		for sec := 0; sec < 198; sec++ {
			fs.Points = append(fs.Points, reports.Point{T: float64(sec) + 0.5, V: 1})
		}
		r.Variants = append(r.Variants, v)
		return v
	}
	mk("vulnerable", fl, 38)
	slow := fl
	slow.RestartRate = 0.8
	mk("vulnerable-slow-restart", slow, 38)
	mit := fl
	mit.PeerThreads, mit.PoolThreads, mit.CellSize, mit.Bootstrap = "pool", 4, 8, "store"
	mk("mitigated", mit, 13)
	return r
}

func TestKinesisCalibSynthetic(t *testing.T) {
	const decode, digest, peerStart, storeStart = 0.03, 0.002, 0.6, 0.9
	r := ksSynthetic(decode, digest, peerStart, storeStart)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
		}
	}
	m, err := KinesisFromReport(r, "vulnerable")
	if err != nil {
		t.Fatal(err)
	}
	near("vulnerable: decode", m.DecodeCost, decode, 0.002)
	near("vulnerable: encode", m.EncodeCost, decode*KinesisEncodeShare, 0.001)
	// 32 servers at 0.25 of a core on 2 cores, all at once: 1/16 each.
	near("vulnerable: load", m.Load, 0.75, 1e-9)
	near("vulnerable: store", m.StoreCost, 3*0.25+storeStart, 0.05)
	if m.BaseThreads != 7 || m.Servers != 32 || m.Added != 4 || m.ThreadLimit != 40 || !m.PerPeer || m.FromStore || m.CellSize != 0 {
		t.Errorf("vulnerable: %+v", m)
	}
	near("add", m.AddAt, 62.2, 1e-9)
	near("remove", m.RemoveAt, 92.3, 1e-9)
	near("restart", m.RestartAt, 102.2, 1e-9)
	near("horizon", m.Horizon, 62.2+120+15, 1e-9)
	if m.LeaseTTL != 10 || m.HealthGrace != 6 || m.HealthTimeout != 1 || m.HealthFailures != 5 || m.LearnSpread != 8 || m.HealthEvery != 1 {
		t.Errorf("vulnerable: timing %+v", m)
	}

	s, err := KinesisFromReport(r, "vulnerable-slow-restart")
	if err != nil {
		t.Fatal(err)
	}
	// 0.8 servers/s × (0.6 + 31×0.03 s) = 1.2 servers building at once:
	// room for every one at its quota.
	near("slow: load", s.Load, 0, 1e-9)
	near("slow: rate", s.RestartRate, 0.8, 1e-9)

	g, err := KinesisFromReport(r, "mitigated")
	if err != nil {
		t.Fatal(err)
	}
	near("mitigated: store", g.StoreCost, storeStart, 0.02)
	near("mitigated: digest", g.DigestCost, digest, 0.002)
	if g.BaseThreads != 9 || g.PerPeer || g.PoolThreads != 4 || g.CellSize != 8 || !g.FromStore {
		t.Errorf("mitigated: %+v", g)
	}
}

func TestKinesisFromReportErrors(t *testing.T) {
	cases := []struct {
		name, variant, want string
		change              func(r *reports.Report)
	}{
		{"no report", "vulnerable", "the report has no scenario", nil},
		{"no scenario", "vulnerable", "the report has no scenario", func(r *reports.Report) { r.Scenario = nil }},
		{"no variant", "canary", `no variant "canary" in the report (has [vulnerable vulnerable-slow-restart mitigated])`, func(*reports.Report) {}},
		{"other workload", "vulnerable", `workload kind "zk-tree-mirror", want kinesis-frontend`, func(r *reports.Report) {
			r.Variants[0].Workload = lab.Encode(map[string]any{"kind": "zk-tree-mirror", "settings": map[string]any{}})
		}},
		{"no threads", "vulnerable", "variant vulnerable has no metric fleet.threads.before_trigger_max", func(r *reports.Report) {
			delete(r.Variants[0].Metrics, "fleet.threads.before_trigger_max")
		}},
		{"threads too few", "vulnerable", "fleet.threads.before_trigger_max = 20 leaves -11 threads besides the peer threads", func(r *reports.Report) {
			r.Variants[0].Metrics["fleet.threads.before_trigger_max"] = 20
		}},
		{"no addition", "vulnerable", "variant vulnerable has no add-capacity fault window", func(r *reports.Report) {
			r.Variants[0].Faults = r.Variants[0].Faults[1:]
		}},
		{"no restart", "mitigated", "variant mitigated has no restart-fleet fault window", func(r *reports.Report) {
			r.Variants[2].Faults = r.Variants[2].Faults[:1]
		}},
		{"no host", "vulnerable", "no host cores", func(r *reports.Report) { r.Host.Cores = 0 }},
		{"no cold start", "vulnerable", "the cost of a shard-map cannot be measured (variant vulnerable has 0 server-start events before the addition", func(r *reports.Report) {
			for _, v := range r.Variants[:2] {
				v.Events = nil
			}
		}},
		{"no routing series", "mitigated", "the store read cannot be measured (variant mitigated has neither server.routing_success nor fleet.servers_routing series", func(r *reports.Report) {
			r.Variants[2].Series = nil
		}},
	}
	for _, c := range cases {
		var r *reports.Report
		if c.change != nil {
			r = ksSynthetic(0.03, 0.002, 0.6, 0.9)
			c.change(r)
		}
		_, err := KinesisFromReport(r, c.variant)
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case !strings.HasPrefix(err.Error(), "calibrate il-0384: ") || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
		}
	}
	// A report without the variant's workload says so.
	r := ksSynthetic(0.03, 0.002, 0.6, 0.9)
	r.Variants[0].Workload = nil
	if _, err := KinesisFromReport(r, "vulnerable"); err == nil || !strings.Contains(err.Error(), "no workload recorded") {
		t.Errorf("a report without its workload: %v", err)
	}
}
