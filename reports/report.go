// Package reports holds the record of one run (report.json) and writes it
// out for people: report.md and a self-contained index.html with charts.
// A report can be loaded back and its verdict re-checked.
package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// SchemaVersion identifies the report.json format.
const SchemaVersion = "chaoslab.report/v2"

// Report is everything one run measured and decided.
type Report struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// Scenario is the scenario as it was run; ScenarioYAML its source text.
	Scenario     *scenarios.Scenario `json:"scenario"`
	ScenarioYAML string              `json:"scenario_yaml"`
	Case         CaseRef             `json:"case"`
	Seed         int64               `json:"seed"`
	Backend      string              `json:"backend"`
	// BackendWhy says how the backend and its images were chosen.
	BackendWhy string `json:"backend_why,omitempty"`
	Host       Host   `json:"host"`
	// Versions of every server, client library and tool involved.
	Versions map[string]string `json:"versions"`
	// Charts are the series the plug-ins declared, in the order and with
	// the titles the report charts them.
	Charts []lab.SeriesDef `json:"charts,omitempty"`
	// MetricDocs say what each metric the scenario names measures.
	MetricDocs map[string]string `json:"metric_docs,omitempty"`
	Variants   []*VariantResult  `json:"variants"`
	// Comparisons across variants (e.g. vulnerable peak >= 10x mitigated).
	Comparisons []verdict.Check `json:"comparisons,omitempty"`
	// Evidence rows: what the incident says next to what each variant measured.
	Evidence []EvidenceRow `json:"evidence,omitempty"`
	// Incident compares a simulated run with the numbers the write-up
	// publishes (`chaoslab sim` at the incident's scale).
	Incident []IncidentRow `json:"incident_comparison,omitempty"`
	// Maps are metastability maps (`chaoslab sim --sweep`).
	Maps    []Map           `json:"maps,omitempty"`
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	// ExpectationMet: every variant reached its expected verdict and every
	// comparison held. `chaoslab run` exits 0 only then.
	ExpectationMet bool `json:"expectation_met"`
	// Rerun is the command that replays this run with the same seed.
	Rerun string `json:"rerun"`
	// Debrief is a training session's comparison of the trainee with the
	// run and the write-up (`chaoslab train`).
	Debrief *Debrief `json:"debrief,omitempty"`
	// Dir is where the report was written (not serialised).
	Dir string `json:"-"`
}

// CaseRef links the run to its case record.
type CaseRef struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Record  string   `json:"record"` // path of the record in the repository, e.g. seeds/il-0587.yaml
	Sources []Source `json:"sources"`
}

// Source is a public write-up and its archived copy.
type Source struct {
	URL      string `json:"url"`
	Archived string `json:"archived,omitempty"`
}

// Host describes the machine the run used.
type Host struct {
	OS       string `json:"os"`
	Kernel   string `json:"kernel"`
	Cores    int    `json:"cores"`
	MemoryMB int    `json:"memory_mb"`
	Cgroup   string `json:"cgroup"` // v1, v2 or none
}

// VariantResult is one variant's run.
type VariantResult struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	StartedAt   time.Time `json:"started_at"`
	// Workload is the effective workload ({"kind", "settings"}: the
	// kind's defaults, the scenario's workload, the variant's overrides);
	// Topology the effective topology of the system.
	Workload json.RawMessage `json:"workload,omitempty"`
	Topology json.RawMessage `json:"topology,omitempty"`
	// Facts say what the topology and workload mean, as a person reads them.
	Facts []lab.Fact `json:"facts,omitempty"`
	// Noun names one instance of the workload and several ("client").
	Noun [2]string `json:"noun"`
	// Parameters are a simulated variant's model parameters, in order
	// (`chaoslab sim`; a harness run has its Facts instead).
	Parameters []Parameter     `json:"parameters,omitempty"`
	Expect     verdict.Verdict `json:"expect"`
	Verdict    verdict.Verdict `json:"verdict"`
	Reason     string          `json:"reason"`
	// LabError is set when the lab itself failed during the variant (a
	// server did not start, a fault could not be injected): the variant is
	// inconclusive whatever its measurements say.
	LabError string `json:"lab_error,omitempty"`
	// Faults are the injected fault windows, in seconds from StartedAt.
	Faults []FaultWindow `json:"faults"`
	// Result holds the events, series, metrics, instances and limits the
	// plug-ins recorded.
	lab.Result
	// Hypotheses as judged against Metrics.
	Hypotheses []verdict.Check `json:"hypotheses"`
	// LogDir holds the servers' and clients' logs, relative to the report.
	LogDir string `json:"log_dir"`
	// Timing is where the variant's wall time went.
	Timing Timing `json:"timing"`
}

// Timing splits a variant's wall time: the lab's setup (servers up,
// seeding) and teardown around the scenario's timeline (warm-up, as
// extended until the workload was steady, faults, observation).
type Timing struct {
	SetupS    float64 `json:"setup_s"`
	TimelineS float64 `json:"timeline_s"`
	TeardownS float64 `json:"teardown_s"`
	WallS     float64 `json:"wall_s"`
	// PlannedS is the scenario's timeline without a warm-up extension.
	PlannedS float64 `json:"planned_s"`
}

// Parameter is one model parameter of a simulated variant (a lab.Fact).
type Parameter = lab.Fact

// FaultWindow is lab.FaultWindow.
type FaultWindow = lab.FaultWindow

// Event is lab.Event.
type Event = lab.Event

// Series is lab.Series.
type Series = lab.Series

// Point is lab.Point.
type Point = lab.Point

// ClientSummary is lab.Instance.
type ClientSummary = lab.Instance

// Exit is lab.Exit.
type Exit = lab.Exit

// EvidenceRow puts a statement of the write-up next to the measurements.
type EvidenceRow struct {
	Incident string                   `json:"incident"`
	Metric   string                   `json:"metric"`
	Observed map[string]verdict.Float `json:"observed"` // by variant
	// Published is the write-up's own figure ("" when the scenario gives
	// none); Number names it in the case record.
	Published string `json:"published,omitempty"`
	Number    string `json:"number,omitempty"`
	// Variant's measurement agrees with the write-up when it lies within
	// Low and High (inclusive); Matches says whether it did (nil: not
	// judged, no band or no measurement).
	Variant string         `json:"variant,omitempty"`
	Low     *verdict.Float `json:"low,omitempty"`
	High    *verdict.Float `json:"high,omitempty"`
	Matches *bool          `json:"matches,omitempty"`
}

// Variant returns the named variant result, or nil.
func (r *Report) Variant(name string) *VariantResult {
	for _, v := range r.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// Save writes report.json into dir.
func (r *Report) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	data, err := json.Marshal(r) // compact: the series are most of it
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	tmp := filepath.Join(dir, "report.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "report.json")); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	r.Dir = dir
	return nil
}

// Load reads a report.json (or the folder holding one).
func Load(path string) (*Report, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "report.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode report %s: %w", path, err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("decode report %s: schema %q, want %q", path, r.Schema, SchemaVersion)
	}
	if r.ScenarioYAML != "" {
		s, err := scenarios.Parse(r.Scenario.Source, []byte(r.ScenarioYAML))
		if err != nil {
			return nil, fmt.Errorf("decode report %s: embedded scenario: %w", path, err)
		}
		r.Scenario = s
	}
	r.Dir = filepath.Dir(path)
	return &r, nil
}

// Recheck judges the stored metrics again with the report's scenario (or
// another one, to ask whether an old run would pass new hypotheses) and
// returns the verdict it reaches; the report is updated in place.
func (r *Report) Recheck(s *scenarios.Scenario) (verdict.Verdict, string, error) {
	if s == nil && r.Scenario == nil && r.Backend == "sim" {
		return r.recheckStored()
	}
	if s == nil {
		s = r.Scenario
	}
	if s == nil {
		return "", "", errors.New("recheck report: no scenario")
	}
	byVariant := map[string]map[string]float64{}
	var outcomes []verdict.Outcome
	for _, v := range r.Variants {
		m := map[string]float64{}
		for k, x := range v.Metrics {
			m[k] = float64(x)
		}
		byVariant[v.Name] = m
		v.Expect = verdict.Verdict(s.Expect[v.Name])
		if v.Verdict == verdict.Aborted {
			outcomes = append(outcomes, verdict.Outcome{Variant: v.Name, Verdict: verdict.Aborted, Expect: v.Expect, Reason: v.Reason})
			continue
		}
		if v.LabError != "" {
			v.Verdict, v.Reason = verdict.Inconclusive, "the lab failed: "+v.LabError
			outcomes = append(outcomes, verdict.Outcome{Variant: v.Name, Verdict: v.Verdict, Expect: v.Expect, Reason: v.Reason})
			continue
		}
		checks, vd, reason := verdict.Hypotheses(s.Hypotheses, m)
		v.Hypotheses, v.Verdict, v.Reason = checks, vd, reason
		outcomes = append(outcomes, verdict.Outcome{Variant: v.Name, Verdict: vd, Expect: v.Expect, Reason: reason})
	}
	r.Comparisons = nil
	for _, c := range s.Comparisons {
		if byVariant[c.Numerator] == nil || byVariant[c.Denominator] == nil {
			continue // a single-variant run has nothing to compare
		}
		r.Comparisons = append(r.Comparisons, verdict.Comparison(c, byVariant))
	}
	r.Evidence = nil
	for _, e := range s.Evidence {
		row := EvidenceRow{Incident: e.Incident, Metric: e.Metric, Observed: map[string]verdict.Float{}}
		for name, m := range byVariant {
			if x, ok := m[e.Metric]; ok {
				row.Observed[name] = verdict.Float(x)
			}
		}
		r.Evidence = append(r.Evidence, r.judgeEvidence(row, e))
	}
	r.Verdict, r.Reason = verdict.Scenario(outcomes, r.Comparisons)
	r.ExpectationMet = verdict.Met(outcomes, r.Comparisons)
	return r.Verdict, r.Reason, nil
}

// recheckStored judges a simulated run's metrics again against the
// hypotheses stored with each variant (a model's hypotheses are not a
// scenario file's); the comparisons are kept as they were judged.
func (r *Report) recheckStored() (verdict.Verdict, string, error) {
	var outcomes []verdict.Outcome
	for _, v := range r.Variants {
		if v.Verdict == verdict.Aborted {
			outcomes = append(outcomes, verdict.Outcome{Variant: v.Name, Verdict: verdict.Aborted, Expect: v.Expect, Reason: v.Reason})
			continue
		}
		m := map[string]float64{}
		for k, x := range v.Metrics {
			m[k] = float64(x)
		}
		hs := make([]scenarios.Hypothesis, len(v.Hypotheses))
		for i, c := range v.Hypotheses {
			hs[i] = scenarios.Hypothesis{ID: c.ID, Description: c.Description, Metric: c.Metric, Op: c.Op, Threshold: c.Threshold, Optional: c.Optional}
		}
		v.Hypotheses, v.Verdict, v.Reason = verdict.Hypotheses(hs, m)
		outcomes = append(outcomes, verdict.Outcome{Variant: v.Name, Verdict: v.Verdict, Expect: v.Expect, Reason: v.Reason})
	}
	if r.Verdict != verdict.Aborted {
		r.Verdict, r.Reason = verdict.Scenario(outcomes, r.Comparisons)
	}
	r.ExpectationMet = verdict.Met(outcomes, r.Comparisons)
	return r.Verdict, r.Reason, nil
}

// DecodeWorkload decodes the variant's effective workload settings into
// into (a kind's settings value) and returns the kind.
func (v *VariantResult) DecodeWorkload(into any) (string, error) {
	var w struct {
		Kind     string          `json:"kind"`
		Settings json.RawMessage `json:"settings"`
	}
	if len(v.Workload) == 0 {
		return "", fmt.Errorf("variant %s: no workload recorded", v.Name)
	}
	if err := json.Unmarshal(v.Workload, &w); err != nil {
		return "", fmt.Errorf("variant %s: decode workload: %w", v.Name, err)
	}
	if err := json.Unmarshal(w.Settings, into); err != nil {
		return w.Kind, fmt.Errorf("variant %s: decode %s settings: %w", v.Name, w.Kind, err)
	}
	return w.Kind, nil
}

// DecodeTopology decodes the variant's effective topology into into.
func (v *VariantResult) DecodeTopology(into any) error {
	if len(v.Topology) == 0 {
		return fmt.Errorf("variant %s: no topology recorded", v.Name)
	}
	if err := json.Unmarshal(v.Topology, into); err != nil {
		return fmt.Errorf("variant %s: decode topology: %w", v.Name, err)
	}
	return nil
}

// judgeEvidence sets the write-up's figure of an evidence row and whether
// the variant's measurement agrees with it.
func (r *Report) judgeEvidence(row EvidenceRow, e scenarios.Evidence) EvidenceRow {
	row.Published, row.Number, row.Variant = e.Published, e.Number, e.Variant
	if n, ok := recordNumber(r.Case.ID, e.Number); ok && row.Published == "" {
		row.Published = PublishedFigure(n) + " (" + n.Name + " in the case record)"
	}
	if e.Low == nil && e.High == nil {
		return row
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if e.Low != nil {
		lo = *e.Low
	}
	if e.High != nil {
		hi = *e.High
	}
	l, h := verdict.Float(lo), verdict.Float(hi)
	row.Low, row.High = &l, &h
	if x, ok := row.Observed[e.Variant]; ok && !math.IsNaN(float64(x)) {
		m := float64(x) >= lo && float64(x) <= hi
		row.Matches = &m
	}
	return row
}
