package reports

import (
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

const (
	sourceURL   = "https://www.elastic.co/blog/elastic-cloud-incident-report-feburary-4-2019"
	archivedURL = "https://web.archive.org/web/2019/https://www.elastic.co/blog/elastic-cloud-incident-report"
)

// testScenario is a replay of IL-0587 as a Go literal (no YAML, so that Load
// does not re-parse it).
func testScenario() *scenarios.Scenario {
	return &scenarios.Scenario{
		ID:          "il-0587-zk-treecache-reconnect-storm",
		Title:       "TreeCache reconnect storm against an overloaded ZooKeeper leader",
		Case:        "IL-0587",
		System:      "zookeeper",
		Description: "Twelve tree mirrors reconnect after the leader pauses; full-refresh mirrors flood the ensemble and run out of memory, paced ones do not.",
		Timeline: scenarios.Timeline{
			Warmup:  scenarios.Duration(30 * time.Second),
			Faults:  []scenarios.FaultStep{{At: 0, Fault: "pause", Target: "leader", Duration: scenarios.Duration(20 * time.Second)}},
			Observe: scenarios.Duration(60 * time.Second),
		},
		Variants: map[string]scenarios.Variant{
			"vulnerable": {Description: "Curator TreeCache: a full refresh of the tree on every reconnect."},
			"mitigated":  {Description: "TreeWatcher: paced refresh, 64 requests in flight."},
		},
		Hypotheses: []scenarios.Hypothesis{
			{ID: "bounded-outstanding", Description: "servers never queue more than 1000 requests", Metric: "servers.outstanding_requests.max", Op: "<=", Threshold: 1000},
			{ID: "no-oom", Description: "no client is OOM-killed", Metric: "clients.oom_kills", Op: "==", Threshold: 0},
			{ID: "fresh-again", Description: "every mirror is fresh within 30 s of the fault ending", Metric: "clients.fresh_after_fault_s", Op: "<=", Threshold: 30},
		},
		Comparisons: []scenarios.Comparison{
			{ID: "peak-ratio", Description: "the vulnerable peak is at least 10x the mitigated one", Metric: "servers.outstanding_requests.max", Numerator: "vulnerable", Denominator: "mitigated", Op: ">=", Threshold: 10},
		},
		Expect: map[string]string{"vulnerable": "violated", "mitigated": "held"},
		Evidence: []scenarios.Evidence{
			{Incident: "refresh requests pile up at the overloaded leader", Metric: "servers.outstanding_requests.max"},
			{Incident: "the proxy layer starts hitting out-of-memory conditions", Metric: "clients.oom_kills", Published: "repeated OOM kills (no figure)", Variant: "vulnerable", Low: ptr(1.0)},
			{Incident: "no deployment in the region can be reached for twenty minutes", Metric: "clients.fresh_after_fault_s", Number: "full_outage_duration", Variant: "vulnerable", Low: ptr(30.0)},
		},
	}
}

var t0 = time.Date(2025, 11, 29, 14, 0, 0, 0, time.UTC)

func testVariant(s *scenarios.Scenario, name string, vulnerable bool, start time.Time) *VariantResult {
	strategy, window := "full-refresh", "none (full-refresh has no window)"
	if !vulnerable {
		strategy, window = "paced", "64 requests in flight per client"
	}
	v := &VariantResult{
		Name:        name,
		Description: s.Variants[name].Description,
		StartedAt:   start,
		Workload:    lab.Encode(map[string]any{"kind": "zk-tree-mirror", "settings": map[string]any{"strategy": strategy, "clients": 12}}),
		Facts: []lab.Fact{{Name: "Kind", Value: "zk-tree-mirror"}, {Name: "Strategy", Value: strategy}, {Name: "Window", Value: window}, {Name: "Clients", Value: "12"},
			{Name: "Tree nodes", Value: "11010 znodes under /proxies (fan-out 10×100×10, 256 B each)"}},
		Noun:   [2]string{"client", "clients"},
		Expect: verdict.Verdict(s.Expect[name]),
		Faults: []FaultWindow{{Fault: "pause", Target: "leader", Member: "zk2", Start: 30, End: 50, Detail: "SIGSTOP for 20s"}},
		LogDir: "logs/" + name,
	}
	v.SetLimit("client.rss_mb", 256, "memory limit 256 MiB")
	const n = 121 // one sample a second for two minutes
	peakServer, peakPending := 180.0, 64.0
	if vulnerable {
		peakServer, peakPending = 4200, 11000
	}
	for _, zk := range []string{"zk1", "zk2", "zk3"} {
		out := v.SeriesFor("server.outstanding_requests", zk, "requests")
		conns := v.SeriesFor("server.connections", zk, "connections")
		lat := v.SeriesFor("server.avg_latency_ms", zk, "ms")
		for i := 0; i < n; i++ {
			t := float64(i)
			x := 2.0
			if t >= 50 && t < 80 {
				x = peakServer * math.Exp(-(t-50)/12)
			}
			if zk == "zk2" && t >= 30 && t < 50 {
				x = math.NaN() // paused: mntr does not answer
			}
			out.Points = append(out.Points, Point{T: t, V: verdict.Float(x)})
			c := 4.0
			if zk == "zk2" && t >= 30 && t < 55 {
				c = 0
			}
			conns.Points = append(conns.Points, Point{T: t, V: verdict.Float(c)})
			lat.Points = append(lat.Points, Point{T: t, V: verdict.Float(1 + x/100)})
		}
	}
	for c := 1; c <= 12; c++ {
		id := fmt.Sprintf("client-%02d", c)
		pending := v.SeriesFor("client.pending", id, "requests")
		rss := v.SeriesFor("client.rss_mb", id, "MiB")
		stale := v.SeriesFor("client.stale_s", id, "s")
		rec := v.SeriesFor("client.reconnects", id, "")
		reconnects := 0.0
		for i := 0; i < n; i++ {
			t := float64(i)
			p, m, st := 0.0, 60+float64(c), 0.2
			if t >= 50 {
				if t == 50 {
					reconnects++
				}
				p = peakPending * math.Exp(-(t-50)/(20+float64(c)))
				m += p / 45
				if vulnerable {
					st = t - 30
				} else if t < 62 {
					st = t - 30
				}
			}
			if vulnerable && m > 256 {
				m = 256
			}
			pending.Points = append(pending.Points, Point{T: t, V: verdict.Float(p)})
			rss.Points = append(rss.Points, Point{T: t, V: verdict.Float(m)})
			stale.Points = append(stale.Points, Point{T: t, V: verdict.Float(st)})
			rec.Points = append(rec.Points, Point{T: t, V: verdict.Float(reconnects)})
		}
		if vulnerable && c == 3 {
			stale.Points[n-1].V = verdict.Float(math.Inf(1)) // never fresh
		}
		v.Clients = append(v.Clients, ClientSummary{ID: id, Starts: 1, PeakRSSMB: 60 + float64(c), Requests: 20000, Reconnect: int64(reconnects), Log: "logs/" + name + "/" + id + ".log"})
	}
	// A series no chart knows by name: charted generically.
	znodes := v.SeriesFor("server.znode_count", "zk1", "znodes")
	for i := 0; i < n; i += 5 {
		znodes.Points = append(znodes.Points, Point{T: float64(i), V: 11111})
	}

	v.Events = append(v.Events,
		Event{T: 31, Kind: "leader", Source: "zk1", Detail: "zk1 became leader (epoch 2)"},
		Event{T: 12, Kind: "health", Source: "zk3", Detail: "ruok: imok"},
	)
	metrics := map[string]float64{
		"servers.outstanding_requests.max": peakServer,
		"clients.oom_kills":                0,
		"clients.fresh_after_fault_s":      12,
		"clients.rss_mb.max":               88,
	}
	if vulnerable {
		for _, c := range []int{3, 7, 11} {
			id := fmt.Sprintf("client-%02d", c)
			t := 55 + float64(c)
			v.Events = append(v.Events,
				Event{T: t, Kind: "oom-kill", Source: id, Detail: "cgroup oom_kill 1"},
				Event{T: t, Kind: "client-exit", Source: id, Detail: "exit 137 (SIGKILL)"})
			v.Clients[c-1].OOMKills = 1
			v.Clients[c-1].Starts = 2
			v.Clients[c-1].PeakRSSMB = 256
			v.Clients[c-1].Exits = []Exit{{T: t, Code: 137, Signal: "SIGKILL", OOM: true, How: "killed by the kernel OOM killer (cgroup oom_kill 1)"}}
		}
		metrics["clients.oom_kills"] = 3
		metrics["clients.fresh_after_fault_s"] = math.Inf(1)
		metrics["clients.rss_mb.max"] = 256
	}
	v.Metrics = map[string]verdict.Float{}
	for k, x := range metrics {
		v.Metrics[k] = verdict.Float(x)
	}
	v.Hypotheses, v.Verdict, v.Reason = verdict.Hypotheses(s.Hypotheses, metrics)
	return v
}

// testReport is a realistic two-variant run that reproduced IL-0587.
func testReport(t *testing.T) *Report {
	t.Helper()
	s := testScenario()
	vuln := testVariant(s, "vulnerable", true, t0.Add(5*time.Second))
	mit := testVariant(s, "mitigated", false, t0.Add(140*time.Second))
	r := &Report{
		Schema:    SchemaVersion,
		RunID:     "20251129-140000-il-0587",
		StartedAt: t0,
		EndedAt:   t0.Add(4*time.Minute + 31*time.Second),
		Scenario:  s.Info(), Spec: new(WithPublished(s.Spec(), "IL-0587")),
		Case: CaseRef{
			ID: "IL-0587", Title: "Overloaded ZooKeeper leader set off TreeCache refresh floods",
			Record:  "seeds/il-0587.yaml",
			Sources: []Source{{URL: sourceURL, Archived: archivedURL}},
		},
		Seed:    42,
		Backend: "docker",
		Host:    Host{OS: "linux", Kernel: "6.8.0", Cores: 8, MemoryMB: 15890, Cgroup: "v2"},
		Versions: map[string]string{
			"zookeeper": "3.4.13", "go-zookeeper/zk": "v1.0.4", "chaoslab": "v0.1.0", "docker": "27.3.1",
		},
		Variants: []*VariantResult{vuln, mit},
		Charts: []lab.SeriesDef{
			{Name: "server.outstanding_requests", Title: "Outstanding requests at each server", Unit: "requests"},
			{Name: "client.pending", Title: "Requests in flight + queued per client", Unit: "requests"},
			{Name: "client.rss_mb", Title: "Client RSS (MiB)", Unit: "MiB", Marks: []string{"oom-kill"}},
			{Name: "client.stale_s", Title: "Mirror staleness (s)", Unit: "s"},
			{Name: "server.avg_latency_ms", Title: "Average request latency at each server (ms)", Unit: "ms"},
			{Name: "server.connections", Title: "Alive client connections per server", Unit: "connections"},
			{Name: "client.reconnects", Title: "Reconnects per client (cumulative)", Unit: "reconnects"},
		},
		MetricDocs: map[string]string{"clients.oom_kills": "client processes killed by the kernel's OOM killer"},
		MetricSources: map[string]MetricSource{"servers.outstanding_requests.max": {Unit: "requests", Series: "server.outstanding_requests", Reduce: "max"},
			"clients.fresh_after_fault_s": {Series: "client.stale_s", Reduce: "recover_below"}},
		Rerun: "chaoslab run il-0587-zk-treecache-reconnect-storm --seed 42 --backend docker",
	}
	r.Judge(*r.Spec)
	require.Equal(t, verdict.Reproduced, r.Verdict, r.Reason)
	require.True(t, r.ExpectationMet)
	return r
}

func TestWriteRoundTrip(t *testing.T) {
	r := testReport(t)
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, Write(r, dir))
	require.Equal(t, dir, r.Dir)
	for _, f := range []string{"report.json", "report.md", "index.html"} {
		require.FileExists(t, filepath.Join(dir, f))
	}

	got, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, dir, got.Dir)
	require.Equal(t, r.RunID, got.RunID)
	require.True(t, r.StartedAt.Equal(got.StartedAt))
	require.Equal(t, r.Verdict, got.Verdict)
	require.Equal(t, r.Reason, got.Reason)
	require.Equal(t, r.ExpectationMet, got.ExpectationMet)
	require.Equal(t, r.Rerun, got.Rerun)
	require.Equal(t, r.Case, got.Case)
	require.Equal(t, r.Scenario, got.Scenario)
	require.Equal(t, r.Spec, got.Spec)
	require.Len(t, got.Variants, len(r.Variants))
	for i, want := range r.Variants {
		v := got.Variants[i]
		require.Equal(t, want.Name, v.Name)
		require.Equal(t, want.Verdict, v.Verdict)
		require.Equal(t, want.Expect, v.Expect)
		require.Equal(t, want.Metrics, v.Metrics) // includes +Inf
		require.Equal(t, want.Faults, v.Faults)
		require.Equal(t, want.Events, v.Events)
		require.Equal(t, want.Clients, v.Clients)
		require.JSONEq(t, string(want.Workload), string(v.Workload))
		require.Equal(t, want.Facts, v.Facts)
		require.Equal(t, want.Limits, v.Limits)
		require.Len(t, v.Series, len(want.Series))
		for j, s := range want.Series {
			require.Equal(t, s.Name, v.Series[j].Name)
			require.Equal(t, s.Source, v.Series[j].Source)
			require.Len(t, v.Series[j].Points, len(s.Points))
		}
		require.Len(t, v.Hypotheses, len(want.Hypotheses))
		for j, c := range want.Hypotheses {
			require.Equal(t, c.ID, v.Hypotheses[j].ID)
			require.Equal(t, c.Held, v.Hypotheses[j].Held)
			require.Equal(t, c.Observed, v.Hypotheses[j].Observed)
		}
	}
	require.True(t, math.IsInf(float64(got.Variant("vulnerable").Metrics["clients.fresh_after_fault_s"]), 1))
	stale := got.Variant("vulnerable").SeriesFor("client.stale_s", "client-03", "s")
	require.True(t, math.IsInf(float64(stale.Points[len(stale.Points)-1].V), 1))
	outstanding := got.Variant("vulnerable").SeriesFor("server.outstanding_requests", "zk2", "requests")
	require.True(t, math.IsNaN(float64(outstanding.Points[35].V)))
	require.Equal(t, r.Comparisons, got.Comparisons)

	// Re-checking the loaded report with its own scenario reaches the same verdict.
	vd, reason, err := got.Recheck()
	require.NoError(t, err)
	require.Equal(t, r.Verdict, vd)
	require.Equal(t, r.Reason, reason)
	require.True(t, got.ExpectationMet)
}

func TestWriteMarkdown(t *testing.T) {
	r := testReport(t)
	dir := t.TempDir()
	require.NoError(t, Write(r, dir))
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	md := string(data)

	require.Contains(t, md, "# "+r.Scenario.Title)
	require.Contains(t, md, "IL-0587")
	require.Contains(t, md, "## Verdict: **REPRODUCED**")
	require.Contains(t, md, "Expectation met")
	for _, h := range r.Spec.Hypotheses {
		require.Contains(t, md, h.ID)
	}
	require.Contains(t, md, "peak-ratio")
	require.Contains(t, md, "```sh\n"+r.Rerun+"\n```")
	require.Contains(t, md, "| What the write-up says | The write-up's figure | Metric | vulnerable | mitigated | Set against | Agreement band | Match |")
	require.Contains(t, md, "| the proxy layer starts hitting out-of-memory conditions | repeated OOM kills (no figure) | `clients.oom_kills` | 3 | 0 | vulnerable | 1 – ∞ | matches |")
	require.Contains(t, md, "| no deployment in the region can be reached for twenty minutes | about 20 minutes (full_outage_duration in the case record) | `clients.fresh_after_fault_s` | never | 12 | vulnerable | 30 – ∞ | matches |")
	require.Contains(t, md, "| `servers.outstanding_requests.max` | 4200 | 180 | — | — | no figure |")
	require.Contains(t, md, "| **fresh-again** — every mirror is fresh within 30 s of the fault ending | `clients.fresh_after_fault_s` | <= 30 | never |  | **violated** |")
	require.Contains(t, md, "11010 znodes under /proxies") // 10 + 10·100 + 10·100·10
	require.Contains(t, md, "OOM kill")
	require.Contains(t, md, "leader change")
	require.Contains(t, md, "health check")    // health checks before and after faults are listed
	require.NotContains(t, md, "client start") // client starts are not notable
	require.Contains(t, md, "logs/vulnerable")
	require.Contains(t, md, "seeds/il-0587.yaml")
	require.Contains(t, md, sourceURL)
	require.Contains(t, md, archivedURL)
	require.Contains(t, md, "## How to read this report")
	require.Contains(t, md, "| Seed | 42 |")
	require.Contains(t, md, "| zookeeper | 3.4.13 |")
}

func TestWriteHTML(t *testing.T) {
	r := testReport(t)
	dir := t.TempDir()
	require.NoError(t, Write(r, dir))
	data, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	page := string(data)

	require.Contains(t, page, "<svg")
	require.Contains(t, page, "REPRODUCED")
	for _, h := range r.Spec.Hypotheses {
		require.Contains(t, page, h.ID)
	}
	require.Contains(t, page, r.Rerun)

	// Self-contained: no external script, style sheet, font or image; the
	// only URLs are the case's sources.
	require.NotContains(t, page, "<script src")
	require.NotContains(t, page, `<link rel="stylesheet"`)
	require.NotContains(t, page, "@import")
	require.NotContains(t, page, "url(")
	rest := strings.NewReplacer(sourceURL, "", archivedURL, "").Replace(page)
	require.NotContains(t, rest, "http://")
	require.NotContains(t, rest, "https://")
	require.Contains(t, page, `href="`+sourceURL+`"`)

	// One chart per key series and variant, in order, then the generic one.
	var order []int
	for _, name := range []string{"server.outstanding_requests", "client.pending", "client.rss_mb", "client.stale_s", "server.avg_latency_ms", "server.connections", "client.reconnects", "server.znode_count"} {
		i := strings.Index(page, `id="chart-`+name+`"`)
		require.GreaterOrEqual(t, i, 0, name)
		order = append(order, i)
	}
	require.IsIncreasing(t, order)
	require.Equal(t, 2*8, strings.Count(page, "<svg"))
	require.Contains(t, page, "memory limit 256 MiB")
	require.Contains(t, page, "pause zk2")
	require.Contains(t, page, "one line per client (12 clients)")
	require.NotContains(t, page, "NaN")
	require.NotContains(t, page, "ZgotmplZ") // html/template refused a value
}

func TestChartsSharedYRange(t *testing.T) {
	r := testReport(t)
	rows, err := buildCharts(r)
	require.NoError(t, err)
	require.Equal(t, "server.outstanding_requests", rows[0].Name)
	require.Len(t, rows[0].Cells, 2)
	// Same y axis: the mitigated chart carries the vulnerable peak's ticks.
	tick := regexp.MustCompile(`>4000<|>4k<`)
	for _, c := range rows[0].Cells {
		require.NotEmpty(t, c.SVG)
		require.Regexp(t, tick, c.SVG, c.Variant)
	}
	require.Len(t, rows[0].Legend, 3) // zk1..zk3
	require.Empty(t, rows[0].LegendNote)
}

func TestRecheckFlipsVerdict(t *testing.T) {
	cases := []struct {
		name   string
		change func(s *verdict.Spec)
		want   verdict.Verdict
	}{
		{
			// A tighter bound that the mitigation does not keep either.
			name: "tighter threshold",
			change: func(s *verdict.Spec) {
				s.Hypotheses[0].Threshold = 100
			},
			want: verdict.Violated,
		},
		{
			// Bounds so loose that the vulnerable variant passes: the
			// incident does not reproduce.
			name: "looser thresholds",
			change: func(s *verdict.Spec) {
				s.Hypotheses[0].Threshold = 10000
				s.Hypotheses[1].Op, s.Hypotheses[1].Threshold = "<=", 5
				s.Hypotheses = s.Hypotheses[:2]
			},
			want: verdict.Held,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := testReport(t)
			dir := t.TempDir()
			require.NoError(t, Write(r, dir))
			loaded, err := Load(dir)
			require.NoError(t, err)

			original := loaded.Spec
			changed := *loaded.Spec
			changed.Hypotheses = append([]verdict.Hypothesis(nil), loaded.Spec.Hypotheses...)
			tc.change(&changed)
			loaded.Spec = &changed
			vd, reason, err := loaded.Recheck()
			require.NoError(t, err)
			require.Equal(t, tc.want, vd, reason)
			require.False(t, loaded.ExpectationMet)
			// The original spec is untouched.
			require.Equal(t, float64(1000), original.Hypotheses[0].Threshold)

			// The re-checked report renders its new verdict.
			require.NoError(t, Write(loaded, dir))
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			require.NoError(t, err)
			require.Contains(t, string(md), "## Verdict: **"+strings.ToUpper(string(tc.want))+"**")

			// The record keeps the spec it was judged by.
			again, err := Load(dir)
			require.NoError(t, err)
			vd, _, err = again.Recheck()
			require.NoError(t, err)
			require.Equal(t, tc.want, vd)
		})
	}
}

func TestSummary(t *testing.T) {
	r := testReport(t)
	dir := t.TempDir()
	require.NoError(t, Write(r, dir))
	s := Summary(r)
	require.Contains(t, s, "REPRODUCED")
	require.Contains(t, s, "vulnerable: violated (as expected)")
	require.Contains(t, s, "mitigated: held (as expected)")
	for _, h := range r.Spec.Hypotheses {
		n := 0
		for _, line := range strings.Split(s, "\n") {
			l := strings.TrimSpace(line)
			for _, mark := range []string{"✓ ", "✗ ", "• broke, as expected: "} {
				if strings.HasPrefix(l, mark+h.ID+":") {
					n++
				}
			}
		}
		require.Equal(t, 2, n, h.ID) // one line per variant
	}
	require.Contains(t, s, "• broke, as expected:", "an expected violation is not marked as a failure")
	require.Contains(t, s, "clients.fresh_after_fault_s = never")
	require.Contains(t, s, "peak-ratio")
	require.Contains(t, s, filepath.Join(dir, "index.html"))
}

func TestWriteMinimalReport(t *testing.T) {
	// A run aborted before any variant ran still gets a readable report.
	r := &Report{Schema: SchemaVersion, RunID: "r1", Verdict: verdict.Aborted, Reason: "interrupted"}
	dir := t.TempDir()
	require.NoError(t, Write(r, dir))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "ABORTED")
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), "ABORTED")
	require.NotContains(t, string(page), "<svg")
	require.Contains(t, Summary(r), "ABORTED")
}

func TestWriteSeriesEdgeCases(t *testing.T) {
	// Series made only of NaN and infinities, a lone sample and a variant
	// missing the series must not break plotting.
	r := testReport(t)
	v := r.Variants[0]
	weird := v.SeriesFor("client.weird", "client-01", "")
	weird.Points = []Point{
		{T: 0, V: verdict.Float(math.NaN())},
		{T: 1, V: verdict.Float(math.Inf(1))},
		{T: 2, V: verdict.Float(math.Inf(-1))},
		{T: 3, V: verdict.Float(math.NaN())},
		{T: 4, V: 5},
		{T: 5, V: verdict.Float(math.NaN())},
	}
	v.SeriesFor("client.allnan", "client-01", "").Points = []Point{{T: 0, V: verdict.Float(math.NaN())}}
	require.NoError(t, Write(r, t.TempDir()))

	// Error wrapping.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	err := Write(r, filepath.Join(file, "sub"))
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "write report: "), err.Error())
	require.Equal(t, 1, strings.Count(err.Error(), "write report:"))
}

// TestWriteDemo writes the sample report to $CHAOSLAB_REPORT_DEMO, to look
// at: CHAOSLAB_REPORT_DEMO=/tmp/demo go test -run TestWriteDemo ./reports/
func TestWriteDemo(t *testing.T) {
	dir := os.Getenv("CHAOSLAB_REPORT_DEMO")
	if dir == "" {
		t.Skip("CHAOSLAB_REPORT_DEMO not set")
	}
	r := testReport(t)
	require.NoError(t, Write(r, dir))
	t.Log(Summary(r))
}

func TestWriteSingleVariantFewClients(t *testing.T) {
	r := testReport(t)
	v := r.Variants[0]
	r.Variants = r.Variants[:1]
	// Keep four clients: few enough lines for a legend.
	var keep []*Series
	for _, s := range v.Series {
		if !strings.HasPrefix(s.Source, "client-") || naturalLess(s.Source, "client-05") {
			keep = append(keep, s)
		}
	}
	v.Series = keep
	vd, _, err := r.Recheck()
	require.NoError(t, err)
	require.Equal(t, verdict.Violated, vd) // the single variant's own verdict
	require.Empty(t, r.Comparisons)

	rows, err := buildCharts(r)
	require.NoError(t, err)
	for _, row := range rows {
		require.Len(t, row.Cells, 1)
		if row.Name == "client.rss_mb" {
			require.Len(t, row.Legend, 4)
			require.Empty(t, row.LegendNote)
			require.Equal(t, []string{"fault", "limit", "oom"}, row.Marks)
		}
	}
	dir := os.Getenv("CHAOSLAB_REPORT_DEMO1")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, Write(r, dir))
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), `class="chart-grid cols-1"`)
	require.Contains(t, string(page), "client-04")
}

func TestWilson(t *testing.T) {
	lo, hi := Wilson(5, 5)
	require.InDelta(t, 0.566, lo, 0.001)
	require.Equal(t, 1.0, hi)
	lo, hi = Wilson(0, 5)
	require.Equal(t, 0.0, lo)
	require.InDelta(t, 0.434, hi, 0.001)
	lo, hi = Wilson(8, 10)
	require.InDelta(t, 0.490, lo, 0.001)
	require.InDelta(t, 0.943, hi, 0.001)
}

// Runs of a scenario sum up to rates per variant, written as a page and
// JUnit XML that parses back.
func TestRepeatAndJUnit(t *testing.T) {
	a, b := testReport(t), testReport(t)
	a.Dir, b.Dir = filepath.Join(t.TempDir(), "run-1"), filepath.Join(t.TempDir(), "run-2")
	b.Seed = 43
	b.Variants[1].Verdict = verdict.Violated // the mitigated variant broke once
	b.ExpectationMet = false
	rep := NewRepeat("il-0587", []*Report{a, b})
	require.Equal(t, 1, rep.Met)
	require.Equal(t, RepeatRate{Variant: "mitigated", Expect: "held", Runs: 2, Reached: 1, Rate: 0.5, Low: rep.Variants[1].Low, High: rep.Variants[1].High}, rep.Variants[1])
	require.Contains(t, rep.Text(), "1/2 =  50%")
	dir := t.TempDir()
	require.NoError(t, WriteRepeat(rep, dir))
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), "95% Wilson interval")
	path := filepath.Join(dir, "junit.xml")
	require.NoError(t, WriteJUnit(path, []*Report{a, b}))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var back junitSuites
	require.NoError(t, xml.Unmarshal(raw, &back))
	require.Len(t, back.Suites, 2)
	require.Equal(t, 0, back.Suites[0].Failures, "the incident reproducing is no failure")
	require.Equal(t, 1, back.Suites[1].Failures, "the mitigated variant's verdict")
	require.Contains(t, string(raw), `classname="il-0587-zk-treecache-reconnect-storm.vulnerable"`)
}

func ptr[T any](v T) *T { return &v }

// The chart of the figure that decided the verdict comes first, with its
// threshold drawn where the figure is in the series' units.
func TestDecidingChartFirst(t *testing.T) {
	r := testReport(t)
	rows, err := buildCharts(r)
	require.NoError(t, err)
	require.Equal(t, "server.outstanding_requests", rows[0].Name)
	require.Equal(t, "bounded-outstanding", rows[0].Deciding)
	require.Equal(t, "bounded-outstanding: <= 1000", rows[0].BoundLabel)
	require.Contains(t, rows[0].Cells[0].SVG, "bounded-outstanding: &lt;= 1000")
	for _, row := range rows[1:] {
		require.Empty(t, row.Deciding, row.Name)
	}

	// A staleness bound (recover_below) is in seconds, not in the
	// series' units: its chart comes first, with no line.
	delete(r.MetricSources, "servers.outstanding_requests.max")
	rows, err = buildCharts(r)
	require.NoError(t, err)
	require.Equal(t, "client.stale_s", rows[0].Name)
	require.Equal(t, "fresh-again", rows[0].Deciding)
	require.Empty(t, rows[0].BoundLabel)
}

// The verdict paragraph names each hypothesis in words and gives its
// figures in their units.
func TestStoryInWordsWithUnits(t *testing.T) {
	story, _ := verdictStory(testReport(t))
	require.Contains(t, story, "bounded-outstanding (servers never queue more than 1000 requests): 4200 requests, where it must stay at or below 1000 requests (4.2x over the threshold)")
}
