package verdict

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	posInf = math.Inf(1)
	negInf = math.Inf(-1)
	nan    = math.NaN()
)

func TestCompare(t *testing.T) {
	cases := []struct {
		v         float64
		op        string
		threshold float64
		want      bool
	}{
		// <
		{9, "<", 10, true},
		{10, "<", 10, false},
		{11, "<", 10, false},
		// <=
		{9, "<=", 10, true},
		{10, "<=", 10, true},
		{10.000001, "<=", 10, false},
		// >
		{11, ">", 10, true},
		{10, ">", 10, false},
		{9, ">", 10, false},
		// >=
		{11, ">=", 10, true},
		{10, ">=", 10, true},
		{9.999999, ">=", 10, false},
		// ==
		{0, "==", 0, true},
		{1, "==", 0, false},
		{-1, "==", 0, false},
		// Infinities compare as numbers.
		{posInf, "<=", 10, false},
		{posInf, ">", 1e300, true},
		{posInf, "==", posInf, true},
		{negInf, "<", -1e300, true},
		{negInf, ">=", 0, false},
		// NaN satisfies no comparison.
		{nan, "<", 10, false},
		{nan, "<=", 10, false},
		{nan, ">", 10, false},
		{nan, ">=", 10, false},
		{nan, "==", nan, false},
		// An unknown operator never holds.
		{1, "!=", 2, false},
		{1, "", 1, false},
		{1, "=", 1, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Compare(c.v, c.op, c.threshold), "Compare(%v, %q, %v)", c.v, c.op, c.threshold)
	}
}

// il0587Hypotheses are the built-in scenario's hypotheses, as Go values.
func il0587Hypotheses() []Hypothesis {
	return []Hypothesis{
		{ID: "no-client-oom", Description: "No client is killed for running out of memory.", Metric: "clients.oom_kills", Op: "==", Threshold: 0},
		{ID: "outstanding-bounded", Description: "Servers never hold more than 150 requests outstanding.", Metric: "servers.outstanding_requests.max_from_fault", Op: "<=", Threshold: 150},
		{ID: "mirrors-fresh-after-fault", Description: "Every mirror is fresh again within 10 s.", Metric: "clients.fresh_after_fault_s", Op: "<=", Threshold: 10},
	}
}

func TestHypothesesHeld(t *testing.T) {
	m := map[string]float64{
		"clients.oom_kills":                           0,
		"servers.outstanding_requests.max_from_fault": 150, // on the bound
		"clients.fresh_after_fault_s":                 3.5,
		"unrelated":                                   1e9,
	}
	checks, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Held, v)
	assert.Equal(t, "every hypothesis held", reason)
	require.Len(t, checks, 3)
	for i, h := range il0587Hypotheses() {
		c := checks[i]
		assert.Equal(t, h.ID, c.ID)
		assert.Equal(t, h.Description, c.Description)
		assert.Equal(t, h.Metric, c.Metric)
		assert.Equal(t, h.Op, c.Op)
		assert.Equal(t, h.Threshold, c.Threshold)
		assert.True(t, c.Held, c.ID)
		assert.False(t, c.Missing, c.ID)
		assert.Equal(t, m[h.Metric], float64(c.Observed), c.ID)
	}
}

func TestHypothesesViolated(t *testing.T) {
	m := map[string]float64{
		"clients.oom_kills":                           2,
		"servers.outstanding_requests.max_from_fault": 120,
		"clients.fresh_after_fault_s":                 4,
	}
	checks, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Violated, v)
	require.Len(t, checks, 3)
	assert.False(t, checks[0].Held)
	assert.False(t, checks[0].Missing)
	assert.Equal(t, 2.0, float64(checks[0].Observed))
	assert.True(t, checks[1].Held)
	assert.True(t, checks[2].Held)
	assert.True(t, strings.HasPrefix(reason, "violated "), reason)
	assert.Contains(t, reason, "no-client-oom")
	assert.NotContains(t, reason, "outstanding-bounded", "a held hypothesis is not named as violated")
	assert.NotContains(t, reason, "mirrors-fresh-after-fault")
}

func TestHypothesesSeveralViolatedNamesEach(t *testing.T) {
	m := map[string]float64{
		"clients.oom_kills":                           3,
		"servers.outstanding_requests.max_from_fault": 4200,
		"clients.fresh_after_fault_s":                 1,
	}
	_, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Violated, v)
	assert.Contains(t, reason, "no-client-oom")
	assert.Contains(t, reason, "outstanding-bounded")
	assert.Contains(t, reason, "4200")
	assert.NotContains(t, reason, "mirrors-fresh-after-fault")
}

func TestHypothesesMissingMetricIsInconclusive(t *testing.T) {
	m := map[string]float64{
		"clients.oom_kills":           0,
		"clients.fresh_after_fault_s": 2,
	}
	checks, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Inconclusive, v)
	assert.Equal(t, "not measured: outstanding-bounded", reason)
	require.Len(t, checks, 3)
	assert.True(t, checks[1].Missing)
	assert.False(t, checks[1].Held)
	assert.True(t, math.IsNaN(float64(checks[1].Observed)))
	assert.Contains(t, checks[1].String(), "not measured")
	assert.True(t, checks[0].Held)
	assert.True(t, checks[2].Held)
}

func TestHypothesesNaNIsInconclusive(t *testing.T) {
	m := map[string]float64{
		"clients.oom_kills":                           0,
		"servers.outstanding_requests.max_from_fault": 10,
		"clients.fresh_after_fault_s":                 nan,
	}
	checks, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Inconclusive, v)
	assert.Equal(t, "not measured: mirrors-fresh-after-fault", reason)
	assert.True(t, checks[2].Missing)
	assert.False(t, checks[2].Held)
}

func TestHypothesesViolationWinsOverMissing(t *testing.T) {
	m := map[string]float64{"clients.oom_kills": 1}
	_, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Violated, v)
	assert.Contains(t, reason, "no-client-oom")
}

func TestHypothesesInfinity(t *testing.T) {
	// A mirror that never became fresh again: +Inf violates <= 10.
	m := map[string]float64{
		"clients.oom_kills":                           0,
		"servers.outstanding_requests.max_from_fault": 10,
		"clients.fresh_after_fault_s":                 posInf,
	}
	checks, v, reason := Hypotheses(il0587Hypotheses(), m)
	assert.Equal(t, Violated, v)
	require.Len(t, checks, 3)
	c := checks[2]
	assert.False(t, c.Missing, "+Inf is a measurement, not a missing one")
	assert.False(t, c.Held)
	assert.True(t, math.IsInf(float64(c.Observed), 1))
	assert.Contains(t, reason, "mirrors-fresh-after-fault")
	assert.Contains(t, reason, "never")

	// +Inf holds a lower bound.
	hs := []Hypothesis{{ID: "grows", Metric: "x", Op: ">=", Threshold: 1e6}}
	_, v, _ = Hypotheses(hs, map[string]float64{"x": posInf})
	assert.Equal(t, Held, v)
	// -Inf holds an upper bound.
	hs = []Hypothesis{{ID: "bounded", Metric: "x", Op: "<", Threshold: 0}}
	_, v, _ = Hypotheses(hs, map[string]float64{"x": negInf})
	assert.Equal(t, Held, v)
}

func TestHypothesesNone(t *testing.T) {
	checks, v, _ := Hypotheses(nil, map[string]float64{"x": 1})
	assert.Empty(t, checks)
	assert.Equal(t, Held, v)
}

func TestCheckString(t *testing.T) {
	c := Check{ID: "outstanding-bounded", Metric: "servers.outstanding_requests.max", Op: "<=", Threshold: 500, Observed: 4200}
	assert.Equal(t, "outstanding-bounded: servers.outstanding_requests.max = 4200, want <= 500: violated", c.String())
	c.Observed, c.Held = 12, true
	assert.Equal(t, "outstanding-bounded: servers.outstanding_requests.max = 12, want <= 500: held", c.String())
	c = Check{ID: "fresh", Metric: "clients.fresh_after_fault_s", Op: "<=", Threshold: 10, Observed: Float(posInf)}
	assert.Equal(t, "fresh: clients.fresh_after_fault_s = never, want <= 10: violated", c.String())
	c = Check{ID: "fresh", Metric: "m", Op: "<=", Threshold: 10, Observed: Float(nan), Missing: true}
	assert.Equal(t, "fresh: m = n/a, want <= 10: not measured", c.String())
}

func outstanding10x() Comparison {
	return Comparison{
		ID: "outstanding-10x", Description: "vulnerable drives 10x the peak",
		Metric: "servers.outstanding_requests.max_from_fault", Numerator: "vulnerable", Denominator: "mitigated",
		Op: ">=", Threshold: 10,
	}
}

func byVariant(vuln, mit float64) map[string]map[string]float64 {
	const k = "servers.outstanding_requests.max_from_fault"
	return map[string]map[string]float64{
		"vulnerable": {k: vuln},
		"mitigated":  {k: mit},
	}
}

func TestComparisonRatio(t *testing.T) {
	c := JudgeComparison(outstanding10x(), byVariant(4200, 40))
	assert.Equal(t, "outstanding-10x", c.ID)
	assert.Equal(t, "vulnerable drives 10x the peak", c.Description)
	assert.Equal(t, "servers.outstanding_requests.max_from_fault(vulnerable)/servers.outstanding_requests.max_from_fault(mitigated)", c.Metric)
	assert.Equal(t, ">=", c.Op)
	assert.Equal(t, 10.0, c.Threshold)
	assert.InDelta(t, 105.0, float64(c.Observed), 1e-9)
	assert.True(t, c.Held)
	assert.False(t, c.Missing)

	// Exactly on the bound.
	c = JudgeComparison(outstanding10x(), byVariant(400, 40))
	assert.InDelta(t, 10.0, float64(c.Observed), 1e-12)
	assert.True(t, c.Held)

	// Below it.
	c = JudgeComparison(outstanding10x(), byVariant(399, 40))
	assert.InDelta(t, 9.975, float64(c.Observed), 1e-12)
	assert.False(t, c.Held)
	assert.False(t, c.Missing)
}

func TestComparisonZeroDenominator(t *testing.T) {
	// Both zero: the ratio is one.
	c := JudgeComparison(outstanding10x(), byVariant(0, 0))
	assert.Equal(t, 1.0, float64(c.Observed))
	assert.False(t, c.Held)
	assert.False(t, c.Missing)

	// A zero denominator counts as one unit: the ratio is the numerator.
	c = JudgeComparison(outstanding10x(), byVariant(4200, 0))
	assert.Equal(t, 4200.0, float64(c.Observed))
	assert.True(t, c.Held)
	c = JudgeComparison(outstanding10x(), byVariant(9, 0))
	assert.Equal(t, 9.0, float64(c.Observed))
	assert.False(t, c.Held)

	// A zero numerator over a non-zero denominator is zero.
	c = JudgeComparison(outstanding10x(), byVariant(0, 40))
	assert.Equal(t, 0.0, float64(c.Observed))
	assert.False(t, c.Held)
}

func TestComparisonMissingSide(t *testing.T) {
	const k = "servers.outstanding_requests.max_from_fault"
	for name, bv := range map[string]map[string]map[string]float64{
		"numerator variant absent":   {"mitigated": {k: 40}},
		"denominator variant absent": {"vulnerable": {k: 4200}},
		"numerator metric absent":    {"vulnerable": {"other": 1}, "mitigated": {k: 40}},
		"denominator metric absent":  {"vulnerable": {k: 4200}, "mitigated": {"other": 1}},
		"numerator NaN":              {"vulnerable": {k: nan}, "mitigated": {k: 40}},
		"denominator NaN":            {"vulnerable": {k: 4200}, "mitigated": {k: nan}},
		"nothing":                    nil,
	} {
		c := JudgeComparison(outstanding10x(), bv)
		assert.True(t, c.Missing, name)
		assert.False(t, c.Held, name)
		assert.True(t, math.IsNaN(float64(c.Observed)), name)
		assert.Contains(t, c.String(), "not measured", name)
	}
}

func TestComparisonInfinity(t *testing.T) {
	// A vulnerable variant whose figure is unbounded over a finite one.
	c := JudgeComparison(outstanding10x(), byVariant(posInf, 40))
	assert.True(t, math.IsInf(float64(c.Observed), 1))
	assert.True(t, c.Held)
	assert.False(t, c.Missing)
}

func held(variant, reason string) Outcome {
	return Outcome{Variant: variant, Verdict: Held, Expect: Held, Reason: reason}
}

func TestScenarioReproduced(t *testing.T) {
	outcomes := []Outcome{
		{Variant: "vulnerable", Verdict: Violated, Expect: Violated, Reason: "violated no-client-oom"},
		held("mitigated", "every hypothesis held"),
	}
	cmp := []Check{JudgeComparison(outstanding10x(), byVariant(4200, 40))}
	v, reason := Scenario(outcomes, cmp)
	assert.Equal(t, Reproduced, v)
	assert.Contains(t, reason, "vulnerable violated as expected (violated no-client-oom)")
	assert.Contains(t, reason, "mitigated held as expected (every hypothesis held)")
	assert.Contains(t, reason, "outstanding-10x")
	assert.True(t, Met(outcomes, cmp))

	// Without comparisons as well.
	v, _ = Scenario(outcomes, nil)
	assert.Equal(t, Reproduced, v)
}

func TestScenarioMitigationViolated(t *testing.T) {
	outcomes := []Outcome{
		{Variant: "vulnerable", Verdict: Violated, Expect: Violated, Reason: "violated no-client-oom"},
		{Variant: "mitigated", Verdict: Violated, Expect: Held, Reason: "violated outstanding-bounded: 900 <= 150"},
	}
	cmp := []Check{JudgeComparison(outstanding10x(), byVariant(4200, 900))}
	v, reason := Scenario(outcomes, cmp)
	assert.Equal(t, Violated, v)
	assert.Contains(t, reason, "mitigated")
	assert.Contains(t, reason, "expected to hold")
	assert.Contains(t, reason, "outstanding-bounded")
	assert.False(t, Met(outcomes, cmp))
}

func TestScenarioIncidentDidNotReproduce(t *testing.T) {
	outcomes := []Outcome{
		{Variant: "vulnerable", Verdict: Held, Expect: Violated, Reason: "every hypothesis held"},
		held("mitigated", "every hypothesis held"),
	}
	v, reason := Scenario(outcomes, nil)
	assert.Equal(t, Held, v)
	assert.Contains(t, reason, "vulnerable")
	assert.Contains(t, reason, "every hypothesis held")
	assert.False(t, Met(outcomes, nil))
}

func TestScenarioAbortedWinsOverEverything(t *testing.T) {
	aborted := Outcome{Variant: "mitigated", Verdict: Aborted, Expect: Held, Reason: "interrupted: context canceled"}
	for name, first := range map[string]Outcome{
		"as expected":      {Variant: "vulnerable", Verdict: Violated, Expect: Violated},
		"mitigation fails": {Variant: "vulnerable", Verdict: Held, Expect: Violated},
		"inconclusive":     {Variant: "vulnerable", Verdict: Inconclusive, Expect: Violated},
	} {
		for _, outcomes := range [][]Outcome{{first, aborted}, {aborted, first}} {
			v, reason := Scenario(outcomes, []Check{{ID: "cmp", Held: false}})
			assert.Equal(t, Aborted, v, name)
			assert.Contains(t, reason, "mitigated", name)
			assert.Contains(t, reason, "interrupted: context canceled", name)
			assert.False(t, Met(outcomes, nil), name)
		}
	}
	// Even over a variant expected to hold that was violated.
	outcomes := []Outcome{{Variant: "mitigated", Verdict: Violated, Expect: Held}, {Variant: "vulnerable", Verdict: Aborted, Expect: Violated}}
	v, _ := Scenario(outcomes, nil)
	assert.Equal(t, Aborted, v)
	// And for a single variant.
	v, _ = Scenario([]Outcome{aborted}, nil)
	assert.Equal(t, Aborted, v)
}

func TestScenarioComparisonFailedIsInconclusive(t *testing.T) {
	outcomes := []Outcome{
		{Variant: "vulnerable", Verdict: Violated, Expect: Violated, Reason: "violated no-client-oom"},
		held("mitigated", "every hypothesis held"),
	}
	cmp := []Check{JudgeComparison(outstanding10x(), byVariant(300, 40))}
	require.False(t, cmp[0].Held)
	v, reason := Scenario(outcomes, cmp)
	assert.Equal(t, Inconclusive, v)
	assert.Contains(t, reason, "comparison failed")
	assert.Contains(t, reason, "outstanding-10x")
	assert.False(t, Met(outcomes, cmp))

	// A comparison that could not be measured is no better.
	cmp = []Check{JudgeComparison(outstanding10x(), map[string]map[string]float64{})}
	v, reason = Scenario(outcomes, cmp)
	assert.Equal(t, Inconclusive, v)
	assert.Contains(t, reason, "not measured")
}

func TestScenarioVariantInconclusive(t *testing.T) {
	outcomes := []Outcome{
		{Variant: "vulnerable", Verdict: Violated, Expect: Violated},
		{Variant: "mitigated", Verdict: Inconclusive, Expect: Held, Reason: "not measured: outstanding-bounded"},
	}
	v, reason := Scenario(outcomes, nil)
	assert.Equal(t, Inconclusive, v)
	assert.Contains(t, reason, "variant mitigated: inconclusive (expected held): not measured: outstanding-bounded")
	assert.False(t, Met(outcomes, nil))
}

func TestScenarioSingleVariant(t *testing.T) {
	// A single variant that met its expectation gives its own verdict.
	vuln := Outcome{Variant: "vulnerable", Verdict: Violated, Expect: Violated, Reason: "violated no-client-oom"}
	v, reason := Scenario([]Outcome{vuln}, nil)
	assert.Equal(t, Violated, v)
	assert.Equal(t, "vulnerable violated as expected (violated no-client-oom)", reason)
	assert.True(t, Met([]Outcome{vuln}, nil))

	mit := held("mitigated", "every hypothesis held")
	v, reason = Scenario([]Outcome{mit}, nil)
	assert.Equal(t, Held, v)
	assert.Equal(t, "mitigated held as expected (every hypothesis held)", reason)
	assert.True(t, Met([]Outcome{mit}, nil))

	// A single variant that did not meet it: its verdict, with the reason why.
	v, reason = Scenario([]Outcome{{Variant: "mitigated", Verdict: Violated, Expect: Held, Reason: "violated x"}}, nil)
	assert.Equal(t, Violated, v)
	assert.Contains(t, reason, "expected to hold")
	v, _ = Scenario([]Outcome{{Variant: "vulnerable", Verdict: Held, Expect: Violated}}, nil)
	assert.Equal(t, Held, v)
	v, _ = Scenario([]Outcome{{Variant: "vulnerable", Verdict: Inconclusive, Expect: Violated}}, nil)
	assert.Equal(t, Inconclusive, v)

	// A single variant as expected but a failed comparison: not shown.
	cmp := []Check{JudgeComparison(outstanding10x(), byVariant(300, 40))}
	v, reason = Scenario([]Outcome{vuln}, cmp)
	assert.Equal(t, Inconclusive, v)
	assert.Contains(t, reason, "comparison failed")
	assert.False(t, Met([]Outcome{vuln}, cmp))
}

func TestMet(t *testing.T) {
	ok := []Outcome{
		{Variant: "vulnerable", Verdict: Violated, Expect: Violated},
		{Variant: "mitigated", Verdict: Held, Expect: Held},
	}
	assert.True(t, Met(ok, nil))
	assert.True(t, Met(ok, []Check{{ID: "c", Held: true}}))
	assert.False(t, Met(ok, []Check{{ID: "c", Held: true}, {ID: "d", Held: false}}))
	assert.False(t, Met(ok, []Check{{ID: "c", Missing: true}}))
	assert.False(t, Met([]Outcome{ok[0], {Variant: "mitigated", Verdict: Violated, Expect: Held}}, nil))
	assert.False(t, Met([]Outcome{ok[0], {Variant: "mitigated", Verdict: Aborted, Expect: Held}}, nil))
	assert.False(t, Met([]Outcome{{Variant: "vulnerable", Verdict: Held, Expect: Violated}}, nil))
	assert.False(t, Met(nil, nil), "nothing ran: nothing was shown")
	assert.False(t, Met(nil, []Check{{Held: true}}))
}

func TestFloatJSONRoundTrip(t *testing.T) {
	cases := []struct {
		in   float64
		json string
	}{
		{posInf, `"+Inf"`},
		{negInf, `"-Inf"`},
		{nan, `"NaN"`},
		{0, `0`},
		{42, `42`},
		{-3.25, `-3.25`},
		{0.1, `0.1`},
		{1e21, `1e+21`},
		{math.MaxFloat64, `1.7976931348623157e+308`},
		{math.SmallestNonzeroFloat64, `5e-324`},
	}
	for _, c := range cases {
		b, err := json.Marshal(Float(c.in))
		require.NoError(t, err)
		assert.Equal(t, c.json, string(b), "marshal %v", c.in)
		var back Float
		require.NoError(t, json.Unmarshal(b, &back), "unmarshal %s", b)
		if math.IsNaN(c.in) {
			assert.True(t, math.IsNaN(float64(back)), "NaN round trip gave %v", back)
			continue
		}
		assert.Equal(t, c.in, float64(back), "round trip of %v", c.in)
	}
}

func TestFloatJSONInStructsAndMaps(t *testing.T) {
	in := struct {
		M map[string]Float `json:"m"`
		C Check            `json:"c"`
	}{
		M: map[string]Float{"fresh": Float(posInf), "peak": 4200, "none": Float(nan), "low": Float(negInf)},
		C: Check{ID: "fresh", Op: "<=", Threshold: 10, Observed: Float(posInf)},
	}
	b, err := json.Marshal(in)
	require.NoError(t, err, "encoding/json cannot write +Inf as a float64; Float must")
	assert.Contains(t, string(b), `"fresh":"+Inf"`)
	assert.Contains(t, string(b), `"observed":"+Inf"`)
	var out struct {
		M map[string]Float `json:"m"`
		C Check            `json:"c"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	assert.True(t, math.IsInf(float64(out.M["fresh"]), 1))
	assert.True(t, math.IsInf(float64(out.M["low"]), -1))
	assert.True(t, math.IsNaN(float64(out.M["none"])))
	assert.Equal(t, 4200.0, float64(out.M["peak"]))
	assert.True(t, math.IsInf(float64(out.C.Observed), 1))
	assert.Equal(t, 10.0, out.C.Threshold)
}

func TestFloatUnmarshalRejectsGarbage(t *testing.T) {
	var f Float
	assert.Error(t, json.Unmarshal([]byte(`"soon"`), &f))
	assert.Error(t, json.Unmarshal([]byte(`true`), &f))
	assert.Error(t, json.Unmarshal([]byte(`"`), &f))
}

func TestFormatValue(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{posInf, "never"},
		{nan, "n/a"},
		{negInf, "-Inf"},
		{0, "0"},
		{4200, "4200"},
		{-7, "-7"},
		{150, "150"},
		{999999999999, "999999999999"},
		{1e12, "1e+12"},
		{3.5, "3.5"},
		{0.25, "0.25"},
		{12.3456, "12.3"},
		{71.2578125, "71.3"},
		{0.0001234, "0.000123"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, FormatValue(c.in), "FormatValue(%v)", c.in)
	}
}

func TestMargin(t *testing.T) {
	cases := []struct {
		obs, thr float64
		op       string
		text     string
		near     bool
	}{
		{22.9, 20, "<=", "1.1x over the threshold", true},
		{527, 150, "<=", "3.5x over the threshold", false},
		{0.0535, 0.35, "<=", "6.5x under the threshold", false},
		{88.5, 5, ">=", "18x over the threshold", false},
		{20, 20, "<=", "on the threshold", true},
		{14, 0, "==", "", false},
		{posInf, 20, "<=", "", false},
		{0, 20, "<=", "", false},
	}
	for _, c := range cases {
		ch := Check{Op: c.op, Threshold: c.thr, Observed: Float(c.obs)}
		assert.Equal(t, c.text, ch.MarginText(), "%v %s %v", c.obs, c.op, c.thr)
		assert.Equal(t, c.near, ch.Near(), "%v %s %v", c.obs, c.op, c.thr)
	}
	assert.False(t, Check{Threshold: 20, Observed: 19, Missing: true}.Near())
}

// A variant whose measurements are unfounded (a fault that did not land)
// is inconclusive with the reason, its hypotheses still judged.
func TestUnfoundedIsInconclusive(t *testing.T) {
	spec := Spec{Hypotheses: []Hypothesis{{ID: "h", Metric: "m", Op: "<=", Threshold: 1}}, Expect: map[string]Verdict{"v": Violated}}
	j := Judge([]VariantInput{{Name: "v", Metrics: map[string]float64{"m": 5}, Unfounded: []string{"pause did not land on zk2"}}}, spec)
	if j.Variants[0].Verdict != Inconclusive || j.Variants[0].Reason != "pause did not land on zk2" {
		t.Fatalf("got %s (%s)", j.Variants[0].Verdict, j.Variants[0].Reason)
	}
	if len(j.Variants[0].Hypotheses) != 1 || j.Variants[0].Hypotheses[0].Held {
		t.Fatalf("hypotheses not judged: %+v", j.Variants[0].Hypotheses)
	}
	if j.Verdict != Inconclusive || j.ExpectationMet {
		t.Fatalf("run %s, met %v", j.Verdict, j.ExpectationMet)
	}
}

// A figure that held at the best value its metric can take is no near
// miss, however close its bound; one short of it still is.
func TestNearMissAtBest(t *testing.T) {
	one := 1.0
	h := []Hypothesis{{ID: "share", Metric: "m", Op: ">=", Threshold: 0.95, Best: &one}}
	checks, _, _ := Hypotheses(h, map[string]float64{"m": 1})
	require.True(t, checks[0].Held)
	require.False(t, checks[0].Near(), "100%% against at least 95%%")
	checks, _, _ = Hypotheses(h, map[string]float64{"m": 0.99})
	require.False(t, checks[0].Near(), "99%% against at least 95%%: 1%% short of 100%% where 5%% is allowed")
	require.Equal(t, "5x inside the threshold, counted from 1", checks[0].MarginText())
	checks, _, _ = Hypotheses(h, map[string]float64{"m": 0.96})
	require.True(t, checks[0].Near(), "96%% against at least 95%%: 4%% short where 5%% is allowed")
	checks, _, _ = Hypotheses(h, map[string]float64{"m": 0.676})
	require.False(t, checks[0].Held)
	require.False(t, checks[0].Near(), "67.6%% against at least 95%%: 32.4%% short where 5%% is allowed")
	require.Equal(t, "6.5x past the threshold, counted from 1", checks[0].MarginText())
}

// A row that says the incident's effect must exceed the mitigated run's
// agrees only when it does, whatever its band says.
func TestEvidenceAbove(t *testing.T) {
	one := 1.0
	e := Evidence{Incident: "clients lost their connections", Metric: "reconnects", Variant: "vulnerable", Low: &one, Above: "mitigated"}
	row := judgeEvidence(e, map[string]map[string]float64{"vulnerable": {"reconnects": 33}, "mitigated": {"reconnects": 36}})
	require.NotNil(t, row.Matches)
	require.False(t, *row.Matches, "33 is in the band but below the mitigated run's 36")
	row = judgeEvidence(e, map[string]map[string]float64{"vulnerable": {"reconnects": 40}, "mitigated": {"reconnects": 36}})
	require.True(t, *row.Matches)
	row = judgeEvidence(e, map[string]map[string]float64{"vulnerable": {"reconnects": 40}})
	require.Nil(t, row.Matches, "the mitigated variant was not run: not judged")
}

// Two figures both never reached (neither fleet recovered) were measured:
// the comparison is judged, and fails, in words; it is not "not measured".
func TestComparisonNeitherReached(t *testing.T) {
	c := JudgeComparison(outstanding10x(), byVariant(posInf, posInf))
	assert.True(t, c.Neither)
	assert.False(t, c.Missing)
	assert.False(t, c.Held)
	assert.Contains(t, c.String(), "neither variant's figure was ever reached")
	assert.NotContains(t, c.String(), "not measured")
	v, reason := Scenario([]Outcome{held("vulnerable", "x"), held("mitigated", "y")}, []Check{c})
	assert.Equal(t, Inconclusive, v)
	assert.Contains(t, reason, "neither")
}
