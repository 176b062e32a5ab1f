package reports

import (
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/verdict"
)

// view is the report laid out for people: every string is formatted once
// here, so that report.md and index.html say the same thing.
type view struct {
	Title       string
	CaseID      string
	CaseTitle   string
	ScenarioID  string
	Description string

	Verdict        string // REPRODUCED
	VerdictClass   string // good, bad, warn
	VerdictMeaning string
	Reason         string
	// Story is the verdict in plain language, with each deciding figure
	// and its margin; NearMisses the figures within verdict.NearFactor of
	// their thresholds.
	Story          string
	NearMisses     []string
	NearFactor     string
	ExpectationMet bool
	Expectation    string

	Debrief *Debrief

	Facts    []kv
	Versions []kv
	Glance   []glanceRow

	Variants    []variantView
	Comparisons []checkRow
	EvidenceCol []string // variant names
	Evidence    []evidenceRow
	Incident    []incidentView
	// Headings of the Incident table: against the write-up, or against the
	// harness run a calibrated model is checked by.
	IncidentTitle, IncidentWhat, IncidentPub string
	Maps                                     []mapView

	Record  string
	Sources []Source
	Rerun   string
	HowTo   []string
	Logs    []kv

	Charts []chartRow
	// ChartNote says what the charts' time axes count from.
	ChartNote string
}

type kv struct{ K, V string }

type glanceRow struct {
	Variant    string
	Expect     string
	Verdict    string
	Class      string
	AsExpected string // yes / no
	Reason     string
}

type variantView struct {
	Name        string
	Description string
	StartedAt   string
	Verdict     string
	Class       string
	Expect      string
	AsExpected  string
	Reason      string
	// Steady says what the steady-state checks before the first fault found.
	Steady string
	// Clock says what the tables' times count from, as the charts do:
	// "s from the first fault" or "s from the variant's start".
	Clock      string
	Workload   []kv
	Hypotheses []checkRow
	Faults     []faultRow
	Events     []eventRow
	EventsMore int
	Clients    []clientRow
	// Who the Clients rows are: "Client", or "Server" for a front-end fleet.
	Who    string
	WhoAll string
	LogDir string
	// WorkloadTitle heads the Workload facts: a harness run's effective
	// workload, or a simulated variant's model parameters. Simulated
	// variants have no client table.
	WorkloadTitle string
	Simulated     bool
}

type checkRow struct {
	ID          string
	Description string
	Metric      string
	MetricHelp  string
	Want        string
	Observed    string
	Result      string // held, violated, not measured
	Class       string
	Margin      string // "1.9x over the threshold"
	Near        bool   // within verdict.NearFactor of the threshold
}

type faultRow struct{ Fault, Target, Member, From, To, Detail, Landed string }

// landed says in a cell what a fault's proofs read back: each target's
// outcome and what was observed.
func landed(f FaultWindow) string {
	if len(f.Proofs) == 0 {
		return "not read back"
	}
	parts := make([]string, len(f.Proofs))
	for i, p := range f.Proofs {
		parts[i] = fmt.Sprintf("%s %s at %s: %s", p.Target, strings.ToUpper(p.Landed), fmtSeconds(p.T), p.Observed)
	}
	return strings.Join(parts, "; ")
}

type eventRow struct{ T, Kind, Source, Detail string }

type clientRow struct {
	ID, Starts, Exits, OOMKills, PeakCharged, PeakRSS, Requests, Reconnects, Log string
}

type evidenceRow struct {
	Incident string
	Metric   string
	Values   []string
	// The write-up's figure and the agreement with it, as the sim
	// report's incident table words them (newIncidentView).
	Published, Variant, Band, Result, Class string
}

// maxEvents bounds the notable-events table of a variant.
const maxEvents = 40

// notableKinds are the event kinds listed under "Notable events".
var notableKinds = map[string]string{
	"oom-kill":     "OOM kill",
	"client-exit":  "client exit",
	"leader":       "leader change",
	"state":        "server state",
	"health":       "health check",
	"fault":        "fault injected",
	"fault-end":    "fault ended",
	"fault-missed": "fault did not land",
	"note":         "note",
}

func newView(r *Report) *view {
	v := &view{
		CaseID:       r.Case.ID,
		CaseTitle:    r.Case.Title,
		Verdict:      verdictWord(r.Verdict),
		VerdictClass: verdictClass(r.Verdict),
		Reason:       r.Reason,
		Record:       r.Case.Record,
		Sources:      r.Case.Sources,
		Rerun:        r.Rerun,
	}
	v.VerdictMeaning = verdictMeaning(r.Verdict, r.ExpectationMet)
	v.Story, v.NearMisses = verdictStory(r)
	v.NearFactor = strconv.FormatFloat(verdict.NearFactor, 'g', -1, 64)
	if s := r.Scenario; s != nil {
		v.Title = s.Title
		v.ScenarioID = s.ID
		v.Description = strings.TrimSpace(s.Description)
		if v.CaseID == "" {
			v.CaseID = s.Case
		}
	}
	if v.Title == "" {
		v.Title = r.Case.Title
	}
	if v.Title == "" {
		v.Title = "chaoslab run " + r.RunID
	}
	v.ExpectationMet = r.ExpectationMet
	v.Debrief = r.Debrief
	if r.ExpectationMet {
		v.Expectation = "Expectation met: every variant reached its expected verdict and every comparison held."
	} else {
		v.Expectation = "Expectation NOT met: the run did not show what the scenario says it should (see the variants and comparisons below)."
	}

	v.Facts, v.Versions = runFacts(r, v.ScenarioID)

	al := alignOnFirstFault(r)
	for _, vr := range r.Variants {
		if vr == nil {
			continue
		}
		vv := newVariantView(vr, r.MetricDocs, al)
		for i := range vv.Clients {
			vv.Clients[i].Log = logLink(r.Dir, vr.LogDir, vv.Clients[i].Log)
		}
		v.Variants = append(v.Variants, vv)
		v.Glance = append(v.Glance, glanceRow{Variant: vv.Name, Expect: vv.Expect, Verdict: vv.Verdict, Class: vv.Class, AsExpected: vv.AsExpected, Reason: vv.Reason})
		v.EvidenceCol = append(v.EvidenceCol, vr.Name)
		if vr.LogDir != "" {
			v.Logs = append(v.Logs, kv{vr.Name, vr.LogDir})
		}
	}
	v.addJudged(r)
	v.HowTo = howToRead
	return v
}

// newVariantView is one variant's section; its times count from where
// the charts' do (al), so that a table and a chart read on one clock.
func newVariantView(vr *VariantResult, docs map[string]string, al alignment) variantView {
	off := al.offset[vr.Name]
	vv := variantView{
		Clock:       al.clock(),
		Name:        vr.Name,
		Description: strings.TrimSpace(vr.Description),
		StartedAt:   fmtTime(vr.StartedAt),
		Verdict:     verdictWord(vr.Verdict),
		Class:       verdictClass(vr.Verdict),
		Expect:      orDash(string(vr.Expect)),
		Reason:      variantWhy(vr),
		LogDir:      vr.LogDir,
		Workload:    factRows(vr.Facts),
	}
	vv.WorkloadTitle = "Effective settings"
	if len(vr.Parameters) > 0 {
		vv.WorkloadTitle, vv.Simulated = "Model parameters", true
		vv.Workload = factRows(vr.Parameters)
	}
	vv.AsExpected = "no"
	if vr.Expect == "" {
		vv.AsExpected = "—"
	} else if vr.Verdict == vr.Expect {
		vv.AsExpected = "yes"
	}
	for _, c := range vr.Hypotheses {
		vv.Hypotheses = append(vv.Hypotheses, newCheckRow(c, docs))
	}
	vv.Steady = steadyLine(vr)
	for _, f := range vr.Faults {
		vv.Faults = append(vv.Faults, faultRow{
			Fault: f.Fault, Target: orDash(f.Target), Member: orDash(f.Member),
			From: fmtSeconds(f.Start - off), To: fmtSeconds(f.End - off), Detail: f.Detail, Landed: landed(f),
		})
	}
	events := append([]Event(nil), vr.Events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].T < events[j].T })
	for _, e := range events {
		label, ok := notableKinds[e.Kind]
		if !ok {
			continue
		}
		if len(vv.Events) == maxEvents {
			vv.EventsMore++
			continue
		}
		vv.Events = append(vv.Events, eventRow{T: fmtSeconds(e.T - off), Kind: label, Source: e.Source, Detail: e.Detail})
	}
	vv.Who, vv.WhoAll = capital(vr.Noun[0]), capital(vr.Noun[1])
	if vv.Who == "" {
		vv.Who, vv.WhoAll = "Client", "Clients"
	}
	charged := peaks(vr, record.SeriesClientMemory)
	for _, c := range vr.Clients {
		vv.Clients = append(vv.Clients, clientRow{
			PeakCharged: charged(c.ID),
			ID:          c.ID,
			Starts:      strconv.Itoa(c.Starts),
			Exits:       fmtExits(c.Exits, off),
			OOMKills:    strconv.Itoa(c.OOMKills),
			PeakRSS:     verdict.FormatValue(c.PeakRSSMB),
			Requests:    strconv.FormatInt(c.Requests, 10),
			Reconnects:  strconv.FormatInt(c.Reconnect, 10),
			Log:         c.Log,
		})
	}
	return vv
}

func factRows(fs []record.Fact) []kv {
	out := make([]kv, len(fs))
	for i, f := range fs {
		out[i] = kv{f.Name, f.Value}
	}
	return out
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func newCheckRow(c verdict.Check, docs map[string]string) checkRow {
	row := checkRow{
		ID:          c.ID,
		Description: strings.TrimSpace(c.Description),
		Metric:      c.Metric,
		MetricHelp:  docs[c.Metric],
		Want:        strings.TrimSpace(c.Op + " " + verdict.FormatValue(c.Threshold)),
		Observed:    verdict.FormatValue(float64(c.Observed)),
		Margin:      c.MarginText(),
		Near:        c.Near(),
	}
	switch {
	case c.Missing && c.Optional:
		row.Result, row.Class, row.Observed = "not judged", "", "not reported by this client"
	case c.Missing:
		row.Result, row.Class, row.Observed = "not measured", "warn", "not measured"
	case c.Neither:
		row.Result, row.Class, row.Observed = "failed: neither reached", "bad", "never / never"
	case c.Held:
		row.Result, row.Class = "held", "good"
	default:
		row.Result, row.Class = "violated", "bad"
	}
	return row
}

func verdictWord(v verdict.Verdict) string {
	if v == "" {
		return "NO VERDICT"
	}
	return strings.ToUpper(string(v))
}

// verdictClass colours a verdict: reproduced and held green, violated red,
// the rest amber.
func verdictClass(v verdict.Verdict) string {
	switch v {
	case verdict.Reproduced, verdict.Held:
		return "good"
	case verdict.Violated:
		return "bad"
	}
	return "warn"
}

func verdictMeaning(v verdict.Verdict, met bool) string {
	switch {
	case v == verdict.Violated && met: // a single-variant run
		return "The variant broke its hypotheses, as the scenario expects."
	case v == verdict.Held && met:
		return "Every hypothesis held, as the scenario expects."
	}
	switch v {
	case verdict.Reproduced:
		return "The incident reproduced: every variant behaved as the scenario expects."
	case verdict.Held:
		return "Every hypothesis held where the incident says the system breaks: the incident did not reproduce."
	case verdict.Violated:
		return "A variant expected to hold broke a hypothesis: that client does not come through the incident's timeline."
	case verdict.Aborted:
		return "The run was interrupted before it could be judged."
	case verdict.Inconclusive:
		return "The run cannot be judged: a measurement is missing, the steady state failed before the first fault, a fault did not land, or a comparison failed (why, below)."
	}
	return ""
}

var howToRead = []string{
	"The verdict at the top combines the variants. Each variant is judged against the scenario's hypotheses: properties a healthy system keeps (e.g. a bounded number of outstanding requests). A variant that breaks any hypothesis is VIOLATED; one that keeps all of them HELD.",
	"A scenario usually has a vulnerable variant, expected to be violated the way the incident was, and a mitigated one, expected to hold. When every variant reaches its expected verdict and every comparison between them holds, the run REPRODUCED the incident. VIOLATED means a variant expected to hold did not; HELD means the vulnerable variant did not break; INCONCLUSIVE means a measurement was missing or a comparison failed.",
	"Observed values are the figures derived from the sampled series; \"never\" means the condition was never reached during the run (e.g. the mirrors never became fresh again), \"n/a\" that it was not measured.",
	"The evidence table sets what the incident write-up says next to what each variant measured. The charts show the raw series: time runs from the start of each variant's first fault (or of the variant, without a fault), shaded bands are the injected faults, a break in a line is a time with no sample, and the charts of one row share their axes so that the variants compare at a glance. Memory is drawn as the kernel charges it to each client's cgroup, the figure the memory limit is enforced on.",
	"report.json holds everything shown here; chaoslab can re-check it against a changed scenario (new thresholds, new hypotheses) without running it again.",
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func fmtDuration(a, b time.Time) string {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return "—"
	}
	return b.Sub(a).Round(time.Second).String()
}

func fmtHost(h Host) string {
	var parts []string
	if h.OS != "" {
		parts = append(parts, h.OS)
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	if h.Cores > 0 {
		parts = append(parts, fmt.Sprintf("%d cores", h.Cores))
	}
	if h.MemoryMB > 0 {
		parts = append(parts, fmt.Sprintf("%d MiB memory", h.MemoryMB))
	}
	if h.Cgroup != "" {
		parts = append(parts, "cgroup "+h.Cgroup)
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// fmtSeconds prints a time on the variant's clock: "42.5 s".
func fmtSeconds(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case math.IsInf(x, 1):
		return "end of run"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + " s"
}

func fmtExits(exits []Exit, off float64) string {
	if len(exits) == 0 {
		return "none"
	}
	var parts []string
	for i, e := range exits {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(exits)-3))
			break
		}
		how := e.How
		if how == "" {
			switch {
			case e.OOM:
				how = "OOM kill"
			case e.Signal != "":
				how = "signal " + e.Signal
			default:
				how = fmt.Sprintf("exit code %d", e.Code)
			}
		}
		parts = append(parts, fmt.Sprintf("%s: %s", fmtSeconds(e.T-off), how))
	}
	return fmt.Sprintf("%d (%s)", len(exits), strings.Join(parts, "; "))
}

// paren wraps s in parentheses, or returns "" for an empty s.
func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

// newEvidenceRow words an evidence row's figure and agreement the way the
// sim report's incident table does: through an IncidentRow.
func newEvidenceRow(e EvidenceRow) evidenceRow {
	row := evidenceRow{Incident: strings.TrimSpace(e.Incident), Metric: e.Metric, Published: orDash(e.Published), Variant: orDash(e.Variant), Band: "—", Result: "not judged"}
	if e.Above != "" {
		row.Variant += ", and above " + e.Above
	}
	if e.Low == nil || e.High == nil {
		if e.Published == "" {
			row.Result = "no figure"
		}
		return row
	}
	inc := IncidentRow{Low: *e.Low, High: *e.High, Matches: e.Matches != nil && *e.Matches}
	iv := newIncidentView(inc)
	row.Band = iv.Band
	if e.Matches != nil {
		row.Result, row.Class = iv.Result, iv.Class
	}
	return row
}

// logLink is a client's log as a link from the report: the path recorded
// when the file is there (or nothing can be checked), else the file of
// that name in the variant's log folder (a path recorded relative to the
// variant's folder rather than the run's).
func logLink(dir, logDir, p string) string {
	if p == "" || logDir == "" || filepath.IsAbs(p) {
		return p
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return p
		}
	}
	if strings.HasPrefix(p, strings.TrimSuffix(logDir, "/")+"/") {
		return p
	}
	return path.Join(logDir, path.Base(filepath.ToSlash(p)))
}

// peaks gives each source's peak of a series ("—" for none).
func peaks(vr *VariantResult, name string) func(source string) string {
	top := map[string]float64{}
	for _, s := range vr.Series {
		if s == nil || s.Name != name {
			continue
		}
		for _, p := range s.Points {
			if y := float64(p.V); finite(y) {
				if old, ok := top[s.Source]; !ok || y > old {
					top[s.Source] = y
				}
			}
		}
	}
	return func(source string) string {
		if y, ok := top[source]; ok {
			return verdict.FormatValue(y)
		}
		return "—"
	}
}

// runFacts are the run's facts (id, seed, backend, times, host, scenario,
// size and its bounds) and its versions, in order.
func runFacts(r *Report, scenarioID string) (facts, versions []kv) {
	facts = []kv{
		{"Run id", r.RunID},
		{"Seed", strconv.FormatInt(r.Seed, 10)},
		{"Backend", orDash(strings.TrimSpace(r.Backend + " " + paren(r.BackendWhy)))},
		{"Started", fmtTime(r.StartedAt)},
		{"Ended", fmtTime(r.EndedAt)},
		{"Duration", fmtDuration(r.StartedAt, r.EndedAt)},
		{"Host", fmtHost(r.Host)},
	}
	if scenarioID != "" {
		facts = append(facts, kv{"Scenario", scenarioID})
	}
	if r.Scenario != nil && r.Scenario.Source != "" {
		facts = append(facts, kv{"Scenario file", r.Scenario.Source})
	}
	if r.Scenario != nil && r.Scenario.Size != "" {
		sz := r.Scenario.Sizes[r.Scenario.Size]
		facts = append(facts, kv{"Size", r.Scenario.Size + ": " + strings.TrimSpace(sz.Description)})
		for _, b := range sz.Bounds {
			facts = append(facts, kv{"Bound at size " + r.Scenario.Size, fmt.Sprintf("%s: %g (%s)", b.Hypothesis, b.Threshold, strings.TrimSpace(b.Why))})
		}
	}
	keys := make([]string, 0, len(r.Versions))
	for k := range r.Versions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		versions = append(versions, kv{k, r.Versions[k]})
	}

	return facts, versions
}

// addJudged adds the comparisons, the evidence rows, a simulated run's
// comparison with the incident and its maps.
func (v *view) addJudged(r *Report) {
	for _, c := range r.Comparisons {
		v.Comparisons = append(v.Comparisons, newCheckRow(c, r.MetricDocs))
	}
	for _, e := range r.Evidence {
		row := newEvidenceRow(e)
		for _, name := range v.EvidenceCol {
			if x, ok := e.Observed[name]; ok {
				row.Values = append(row.Values, verdict.FormatValue(float64(x)))
			} else {
				row.Values = append(row.Values, "—")
			}
		}
		v.Evidence = append(v.Evidence, row)
	}
	v.IncidentTitle, v.IncidentWhat, v.IncidentPub = "Against the write-up", "What the write-up says", "Published"
	for _, row := range r.Incident {
		v.Incident = append(v.Incident, newIncidentView(row))
		if row.Against != "" {
			v.IncidentTitle, v.IncidentWhat, v.IncidentPub = "Against the "+row.Against, "Compared with", "Measured there"
		}
	}
	for _, m := range r.Maps {
		v.Maps = append(v.Maps, newMapView(m))
	}
}

// steadyLine says in a sentence what the steady-state checks found before
// the first fault ("" when the record keeps none).
func steadyLine(vr *VariantResult) string {
	st := vr.Steady
	if st == nil {
		return ""
	}
	if bad := vr.Unfounded(); len(bad) > 0 {
		var ss []string
		for _, b := range bad {
			if s, ok := strings.CutPrefix(b, "steady state: "); ok {
				ss = append(ss, s)
			}
		}
		if len(ss) > 0 {
			return "Steady state before the first fault FAILED: " + strings.Join(ss, "; ") + "."
		}
	}
	health := "servers healthy"
	if !st.Checked {
		health = "servers' health not checked"
	}
	return fmt.Sprintf("Steady state before the first fault: %d of %d %s, %s, no instance exited.", st.Ready, st.Total, st.What, health)
}
