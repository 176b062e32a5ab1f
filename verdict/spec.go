package verdict

import (
	"math"
	"strings"
)

// What a scenario states, for the verdict to judge: its hypotheses, the
// comparisons across its variants, what each variant must reach, and the
// evidence rows that put the write-up's figures next to the measurements.
// A run's record keeps the Spec it was judged by, so that judging it again
// needs no scenario file.

// Hypothesis is a property that should hold in a run.
type Hypothesis struct {
	// ID names the hypothesis in reports.
	ID string `yaml:"id" json:"id" jsonschema:"required"`
	// Description states the property in a sentence.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Metric is the measurement it is about: a metric a plug-in declares,
	// or a reducer over a series, e.g. max(server.outstanding_requests)@from-fault.
	Metric string `yaml:"metric" json:"metric" jsonschema:"required"`
	// Op compares the measured value with Threshold: <, <=, >, >= or ==.
	Op string `yaml:"op" json:"op" jsonschema:"required"`
	// Threshold is the bound, in the metric's unit.
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// Best is the best value the metric can take, where its unit has one
	// (a share judged with >= at best 1, with <= at best 0): a figure that
	// held at it is no near miss however close the bound. Derived from
	// the metric's unit, not written in a scenario.
	Best *float64 `yaml:"-" json:"best,omitempty" jsonschema:"-"`
	// Optional: judged only when measured. A figure only a client can
	// report (its mirror's freshness) is optional, so that a client that
	// reports nothing is judged by the rest ("not reported").
	Optional bool `yaml:"optional,omitempty" json:"optional,omitempty"`
}

// Comparison checks Metric(Numerator)/Metric(Denominator) Op Threshold.
type Comparison struct {
	// ID names the comparison in reports.
	ID string `yaml:"id" json:"id" jsonschema:"required"`
	// Description states the relation in a sentence.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Metric is the measurement compared (as in a hypothesis).
	Metric string `yaml:"metric" json:"metric" jsonschema:"required"`
	// Numerator is the variant whose value is divided.
	Numerator string `yaml:"numerator" json:"numerator" jsonschema:"required"`
	// Denominator is the variant whose value divides.
	Denominator string `yaml:"denominator" json:"denominator" jsonschema:"required"`
	// Op compares the ratio with Threshold: <, <=, >, >= or ==.
	Op string `yaml:"op" json:"op" jsonschema:"required"`
	// Threshold is the bound of the ratio.
	Threshold float64 `yaml:"threshold" json:"threshold"`
}

// Evidence maps a statement of the write-up to a measured metric.
type Evidence struct {
	// Incident is the statement of the write-up, paraphrased.
	Incident string `yaml:"incident" json:"incident" jsonschema:"required"`
	// Metric is the measurement that shows it in a run (as in a hypothesis).
	Metric string `yaml:"metric" json:"metric" jsonschema:"required"`
	// Published is the write-up's own figure, as the write-up gives it
	// ("about 20 minutes", "repeated OOM kills (no figure)"); Number names
	// it in the case record instead (seeds/<id>.yaml numbers).
	Published string `yaml:"published,omitempty" json:"published,omitempty"`
	Number    string `yaml:"number,omitempty" json:"number,omitempty"`
	// Variant is the variant whose measurement is set against the
	// write-up's figure; Low and High bound the measurements that agree
	// with it (inclusive; no High: no upper bound).
	Variant string   `yaml:"variant,omitempty" json:"variant,omitempty"`
	Low     *float64 `yaml:"low,omitempty" json:"low,omitempty"`
	High    *float64 `yaml:"high,omitempty" json:"high,omitempty"`
	// Above names another variant whose measurement Variant's must also
	// exceed for the row to agree (the write-up's effect is the
	// incident's, not the lab's: more reconnects than the mitigated run).
	Above string `yaml:"above,omitempty" json:"above,omitempty"`
}

// Spec is everything a run is judged by.
type Spec struct {
	// Expect is the verdict each variant must reach.
	Expect      map[string]Verdict `json:"expect"`
	Hypotheses  []Hypothesis       `json:"hypotheses"`
	Comparisons []Comparison       `json:"comparisons,omitempty"`
	// Evidence rows, each with the write-up's figure already written out
	// (Published) where the scenario names a number of the case record.
	Evidence []Evidence `json:"evidence,omitempty"`
}

// EvidenceRow puts a statement of the write-up next to the measurements.
type EvidenceRow struct {
	Incident string           `json:"incident"`
	Metric   string           `json:"metric"`
	Observed map[string]Float `json:"observed"` // by variant
	// Published is the write-up's own figure ("" when the scenario gives
	// none); Number names it in the case record.
	Published string `json:"published,omitempty"`
	Number    string `json:"number,omitempty"`
	// Variant's measurement agrees with the write-up when it lies within
	// Low and High (inclusive); Matches says whether it did (nil: not
	// judged, no band or no measurement).
	Variant string `json:"variant,omitempty"`
	Low     *Float `json:"low,omitempty"`
	High    *Float `json:"high,omitempty"`
	// Above is the variant whose measurement Variant's must exceed too.
	Above   string `json:"above,omitempty"`
	Matches *bool  `json:"matches,omitempty"`
}

// VariantInput is one variant's measurements as a record keeps them.
type VariantInput struct {
	Name    string
	Metrics map[string]float64
	// Aborted: the run was interrupted before the variant could be
	// judged (Reason says how); LabError: the lab itself failed during it.
	Aborted  bool
	Reason   string
	LabError string
	// Unfounded says why the measurements cannot decide the variant
	// although they were taken: its steady state failed before the first
	// fault, or a fault did not land. The variant is inconclusive; its
	// hypotheses are still judged, for the reader.
	Unfounded []string
}

// VariantJudgement is one variant's verdict.
type VariantJudgement struct {
	Name       string
	Expect     Verdict
	Hypotheses []Check
	Verdict    Verdict
	Reason     string
}

// Judgement is a run's verdict: each variant's, the comparisons', the
// evidence rows, and the run's as a whole.
type Judgement struct {
	Variants       []VariantJudgement
	Comparisons    []Check
	Evidence       []EvidenceRow
	Verdict        Verdict
	Reason         string
	ExpectationMet bool
}

// Judge judges a run's measurements by spec.
func Judge(in []VariantInput, spec Spec) Judgement {
	var j Judgement
	byVariant := map[string]map[string]float64{}
	var outcomes []Outcome
	for _, v := range in {
		byVariant[v.Name] = v.Metrics
		vj := VariantJudgement{Name: v.Name, Expect: spec.Expect[v.Name]}
		switch {
		case v.Aborted:
			vj.Verdict, vj.Reason = Aborted, v.Reason
		case v.LabError != "":
			vj.Verdict, vj.Reason = Inconclusive, "the lab failed: "+v.LabError
		case len(v.Unfounded) > 0:
			vj.Hypotheses, _, _ = Hypotheses(spec.Hypotheses, v.Metrics)
			vj.Verdict, vj.Reason = Inconclusive, strings.Join(v.Unfounded, "; ")
		default:
			vj.Hypotheses, vj.Verdict, vj.Reason = Hypotheses(spec.Hypotheses, v.Metrics)
		}
		j.Variants = append(j.Variants, vj)
		outcomes = append(outcomes, Outcome{Variant: v.Name, Verdict: vj.Verdict, Expect: vj.Expect, Reason: vj.Reason})
	}
	for _, c := range spec.Comparisons {
		if byVariant[c.Numerator] != nil && byVariant[c.Denominator] != nil {
			j.Comparisons = append(j.Comparisons, JudgeComparison(c, byVariant))
		}
	}
	for _, e := range spec.Evidence {
		j.Evidence = append(j.Evidence, judgeEvidence(e, byVariant))
	}
	j.Verdict, j.Reason = Scenario(outcomes, j.Comparisons)
	j.ExpectationMet = Met(outcomes, j.Comparisons)
	return j
}

// judgeEvidence is an evidence row: each variant's measurement, and
// whether the named variant's agrees with the write-up's figure.
func judgeEvidence(e Evidence, byVariant map[string]map[string]float64) EvidenceRow {
	row := EvidenceRow{Incident: e.Incident, Metric: e.Metric, Observed: map[string]Float{},
		Published: e.Published, Number: e.Number, Variant: e.Variant, Above: e.Above}
	for name, m := range byVariant {
		if x, ok := m[e.Metric]; ok {
			row.Observed[name] = Float(x)
		}
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
	l, h := Float(lo), Float(hi)
	row.Low, row.High = &l, &h
	if x, ok := row.Observed[e.Variant]; ok && !math.IsNaN(float64(x)) {
		m := float64(x) >= lo && float64(x) <= hi
		if e.Above != "" {
			y, ok := row.Observed[e.Above]
			if !ok || math.IsNaN(float64(y)) {
				return row // the other variant was not measured (or not run)
			}
			m = m && x > y
		}
		row.Matches = &m
	}
	return row
}
