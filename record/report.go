package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/verdict"
)

// SchemaVersion identifies the report.json format.
const SchemaVersion = "chaoslab.report/v3"

// schemaV2 is the format before v3, which kept no Spec: it loads, and is
// judged again by its embedded scenario (scenarios.OfRecord).
const schemaV2 = "chaoslab.report/v2"

// Report is everything one run measured and decided.
type Report struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// Scenario names the scenario as it was run; ScenarioYAML is its
	// source text (scenarios.OfRecord parses it again, at its size).
	Scenario     *ScenarioInfo `json:"scenario"`
	ScenarioYAML string        `json:"scenario_yaml"`
	// Spec is what the run was judged by (the scenario's hypotheses,
	// comparisons, expectations and evidence, the write-up's figures
	// written out): judging it again needs no scenario file.
	Spec    *verdict.Spec `json:"spec,omitempty"`
	Case    CaseRef       `json:"case"`
	Seed    int64         `json:"seed"`
	Backend string        `json:"backend"`
	// BackendWhy says how the backend and its images were chosen.
	BackendWhy string `json:"backend_why,omitempty"`
	Host       Host   `json:"host"`
	// Versions of every server, client library and tool involved.
	Versions map[string]string `json:"versions"`
	// Charts are the series the plug-ins declared, in the order and with
	// the titles the report charts them.
	Charts []SeriesDef `json:"charts,omitempty"`
	// MetricDocs say what each metric the scenario names measures.
	MetricDocs map[string]string `json:"metric_docs,omitempty"`
	// MetricSources say the unit of each metric the scenario judges and
	// which series it reduces, and how (max, min, mean, last,
	// time_above, ...): reports chart the deciding metric's series first,
	// with its threshold, and give figures with their units.
	MetricSources map[string]MetricSource `json:"metric_sources,omitempty"`
	Variants      []*VariantResult        `json:"variants"`
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

// MetricSource is a metric's unit and the series it reduces, with its
// reducer (Series empty: the metric is not a reduced series).
type MetricSource struct {
	Unit   string `json:"unit,omitempty"`
	Series string `json:"series,omitempty"`
	Reduce string `json:"reduce,omitempty"`
}

// InSeriesUnits says whether the metric is in its series' units (max,
// min, mean, last of it), so that its threshold can be drawn on the
// series' chart; a duration above a bound is not.
func (m MetricSource) InSeriesUnits() bool {
	switch m.Reduce {
	case "max", "min", "mean", "last":
		return true
	}
	return false
}

// ScenarioInfo is what a record says of its scenario: the fields of the
// scenario's own JSON form that reports show.
type ScenarioInfo struct {
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Case        string `json:"case,omitempty"`
	Source      string `json:"source,omitempty"`
	// Size is the size it was run at ("": as written); Sizes describe
	// each size.
	Size  string          `json:"size,omitempty"`
	Sizes map[string]Size `json:"sizes,omitempty"`
	// Plan is its timeline, as run (at its size).
	Plan *Plan `json:"plan,omitempty"`
}

// Plan is a scenario's timeline in seconds: the warm-up, each fault step
// after it, the observation after the last.
type Plan struct {
	WarmupS  float64       `json:"warmup_s"`
	ObserveS float64       `json:"observe_s"`
	Faults   []PlannedStep `json:"faults"`
}

// PlannedStep is one fault step of a Plan, from the warm-up's end.
type PlannedStep struct {
	Fault     string  `json:"fault"`
	Target    string  `json:"target"`
	AtS       float64 `json:"at_s"`
	DurationS float64 `json:"duration_s"`
}

// Size is a scenario's size as a record describes it.
type Size struct {
	Description string  `json:"description"`
	Bounds      []Bound `json:"bounds,omitempty"`
}

// Bound is a hypothesis's threshold restated at a size, with its reason.
type Bound struct {
	Hypothesis string  `json:"hypothesis"`
	Threshold  float64 `json:"threshold"`
	Why        string  `json:"why"`
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
	Facts []Fact `json:"facts,omitempty"`
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
	// Unenforced names the limits (memory, pids, cpu) the variant's
	// programs asked for and the placement could not enforce (no cgroup
	// here): what they bound cannot be judged, so the variant is
	// inconclusive.
	Unenforced []string `json:"unenforced,omitempty"`
	// Faults are the injected fault windows, in seconds from StartedAt.
	Faults []FaultWindow `json:"faults"`
	// Steady is what the warm-up and the health check before the first
	// fault found (nil: a record of a simulation, or older than v3).
	Steady *SteadyState `json:"steady,omitempty"`
	// Result holds the events, series, metrics, instances and limits the
	// plug-ins recorded.
	Result
	// Hypotheses as judged against Metrics.
	Hypotheses []verdict.Check `json:"hypotheses"`
	// LogDir holds the servers' and clients' logs, relative to the report.
	LogDir string `json:"log_dir"`
	// Timing is where the variant's wall time went.
	Timing Timing `json:"timing"`
}

// SteadyState is what the runner found before the first fault: how many
// of the workload's instances were steady when the warm-up ended, and
// whether the servers passed the health check before the first fault.
type SteadyState struct {
	Ready int    `json:"ready"`
	Total int    `json:"total"`
	What  string `json:"what"`
	// Checked: the health check before the first fault ran; Healthy:
	// it passed.
	Checked bool `json:"checked"`
	Healthy bool `json:"healthy"`
}

// Unfounded says why the variant's measurements cannot decide it: its
// steady state failed before the first fault (an instance died or was
// OOM-killed, the workload was not steady at the warm-up's end, the
// servers were not healthy), or a fault of the scenario's timeline did
// not land (read back from its target); a person's action that did not
// land is on the timeline only.
func (v *VariantResult) Unfounded() []string {
	out := v.unsteady()
	if len(v.Unenforced) > 0 {
		out = append(out, fmt.Sprintf("the %s limits the scenario sets were not enforced on this placement (no cgroup could be used: run as root on a machine with cgroups, or on the docker placement)", strings.Join(v.Unenforced, ", ")))
	}
	for _, f := range v.Faults {
		if !f.IsAction() {
			out = append(out, f.Missed()...)
		}
		if strings.HasSuffix(f.Detail, EmergencyStopDetail) {
			out = append(out, fmt.Sprintf("the facilitator's emergency stop ended %s on %s at %.1f s, before its planned end", f.Fault, f.Member, f.End))
		}
	}
	return out
}

// EmergencyStopDetail ends the detail of a fault window that a game
// day's emergency stop ended: its measurements cannot decide the variant.
const EmergencyStopDetail = "ended at once by the facilitator's emergency stop; its target restored"

// unsteady lists the steady-state checks that failed before the first
// fault of the scenario's timeline.
func (v *VariantResult) unsteady() []string {
	first := math.Inf(1)
	for _, f := range v.Faults {
		if !f.IsAction() {
			first = math.Min(first, f.Start)
		}
	}
	if math.IsInf(first, 1) {
		return nil // no fault ran: nothing to be steady before
	}
	var out []string
	if st := v.Steady; st != nil {
		if st.Total > 0 && st.Ready < st.Total {
			out = append(out, fmt.Sprintf("steady state: the warm-up ended with %d of %d %s", st.Ready, st.Total, st.What))
		}
		if st.Checked && !st.Healthy {
			out = append(out, "steady state: the servers were not healthy before the first fault")
		}
	}
	for _, c := range v.Clients {
		for _, e := range c.Exits {
			if e.T < first {
				out = append(out, fmt.Sprintf("steady state: %s %s at %.1f s, before the first fault (at %.1f s)", c.ID, exitVerb(e), e.T, first))
			}
		}
	}
	return out
}

func exitVerb(e Exit) string {
	switch {
	case e.OOM:
		return "was OOM-killed"
	case e.How != "":
		return "ended (" + e.How + ")"
	case e.Signal != "":
		return "was stopped by a signal (" + e.Signal + ")"
	}
	return fmt.Sprintf("exited with status %d", e.Code)
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

// Parameter is one model parameter of a simulated variant (a Fact).
type Parameter = Fact

// ClientSummary is an Instance.
type ClientSummary = Instance

// EvidenceRow is verdict.EvidenceRow.
type EvidenceRow = verdict.EvidenceRow

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
	if r.Schema != SchemaVersion && r.Schema != schemaV2 {
		return nil, fmt.Errorf("decode report %s: schema %q, want %q", path, r.Schema, SchemaVersion)
	}
	r.Dir = filepath.Dir(path)
	return &r, nil
}

// Recheck judges the stored metrics again by the record's spec (a
// simulated run's, by the hypotheses stored with each variant) and
// returns the verdict it reaches; the report is updated in place. Set
// Spec first to judge an old run by new hypotheses.
func (r *Report) Recheck() (verdict.Verdict, string, error) {
	if r.Spec == nil && r.Backend == "sim" {
		return r.recheckStored()
	}
	if r.Spec == nil {
		return "", "", errors.New("recheck report: it keeps no spec to judge it by (written before chaoslab.report/v3)")
	}
	return r.Judge(*r.Spec), r.Reason, nil
}

// Judge judges the stored metrics by spec and writes the judgement into
// the report: each variant's hypotheses and verdict, the comparisons, the
// evidence rows, the run's verdict.
func (r *Report) Judge(spec verdict.Spec) verdict.Verdict {
	in := make([]verdict.VariantInput, len(r.Variants))
	for i, v := range r.Variants {
		m := map[string]float64{}
		for k, x := range v.Metrics {
			m[k] = float64(x)
		}
		in[i] = verdict.VariantInput{Name: v.Name, Metrics: m, Aborted: v.Verdict == verdict.Aborted, Reason: v.Reason,
			LabError: v.LabError, Unfounded: v.Unfounded()}
	}
	j := verdict.Judge(in, spec)
	for i, vj := range j.Variants {
		v := r.Variants[i]
		v.Expect, v.Verdict, v.Reason = vj.Expect, vj.Verdict, vj.Reason
		if !in[i].Aborted && v.LabError == "" {
			v.Hypotheses = vj.Hypotheses
		}
	}
	r.Comparisons, r.Evidence = j.Comparisons, j.Evidence
	r.Verdict, r.Reason, r.ExpectationMet = j.Verdict, j.Reason, j.ExpectationMet
	return r.Verdict
}

// WithPublished is spec with the write-up's figure written out in each
// evidence row that names a number of the case record.
func WithPublished(spec verdict.Spec, caseID string) verdict.Spec {
	ev := make([]verdict.Evidence, len(spec.Evidence))
	for i, e := range spec.Evidence {
		if n, ok := recordNumber(caseID, e.Number); ok && e.Published == "" {
			e.Published = PublishedFigure(n) + " (" + n.Name + " in the case record)"
		}
		ev[i] = e
	}
	spec.Evidence = ev
	return spec
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
		hs := make([]verdict.Hypothesis, len(v.Hypotheses))
		for i, c := range v.Hypotheses {
			hs[i] = verdict.Hypothesis{ID: c.ID, Description: c.Description, Metric: c.Metric, Op: c.Op, Threshold: c.Threshold, Optional: c.Optional}
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
