// Package verdict decides what a run shows. Verdicts are data: a run that
// violates its hypotheses is a result, not an error.
package verdict

import (
	"fmt"
	"math"
	"strings"
)

// Verdict is the outcome of a variant or a whole scenario run.
type Verdict string

// Infinitive is what a variant expected to reach this verdict was expected
// to do: "hold", "break", or "be <verdict>".
func (v Verdict) Infinitive() string {
	switch v {
	case Held:
		return "hold"
	case Violated:
		return "break"
	}
	return "be " + string(v)
}

const (
	// Reproduced: every variant reached its expected verdict (the vulnerable
	// one broke the way the incident did and the mitigated one held).
	Reproduced Verdict = "reproduced"
	// Held: every hypothesis held.
	Held Verdict = "held"
	// Violated: at least one hypothesis was violated.
	Violated Verdict = "violated"
	// Aborted: the run was interrupted before it could be judged.
	Aborted Verdict = "aborted"
	// Inconclusive: a measurement needed for the verdict is missing, or the
	// run failed for a reason outside the system under test.
	Inconclusive Verdict = "inconclusive"
)

// Check is one hypothesis or comparison judged against measurements.
type Check struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Metric      string  `json:"metric"`
	Op          string  `json:"op"`
	Threshold   float64 `json:"threshold"`
	Observed    Float   `json:"observed"`
	Missing     bool    `json:"missing,omitempty"`
	// Optional: a missing measurement does not make the variant
	// inconclusive (a figure the client did not report).
	Optional bool `json:"optional,omitempty"`
	Held     bool `json:"held"`
	// Best is the best value the metric can take (Hypothesis.Best).
	Best *Float `json:"best,omitempty"`
	// Neither: a comparison both of whose figures were never reached
	// (neither fleet recovered). Both were measured; there is no ratio, and
	// the comparison fails, since it claims one figure is a multiple of
	// the other.
	Neither bool `json:"neither,omitempty"`
}

// String is a one-line human form: "peak 4200 <= 500: violated".
func (c Check) String() string {
	state := "held"
	switch {
	case c.Missing && c.Optional:
		state = "not reported (optional)"
	case c.Missing:
		state = "not measured"
	case c.Neither:
		return fmt.Sprintf("%s: %s: neither variant's figure was ever reached (both never), want a ratio %s %s: failed", c.ID, c.Metric, c.Op, FormatValue(c.Threshold))
	case !c.Held:
		state = "violated"
	}
	return fmt.Sprintf("%s: %s = %s, want %s %s: %s", c.ID, c.Metric, FormatValue(float64(c.Observed)), c.Op, FormatValue(c.Threshold), state)
}

// Compare applies op.
func Compare(v float64, op string, threshold float64) bool {
	switch op {
	case "<":
		return v < threshold
	case "<=":
		return v <= threshold
	case ">":
		return v > threshold
	case ">=":
		return v >= threshold
	case "==":
		return v == threshold
	}
	return false
}

// Hypotheses judges each hypothesis against the metrics of one variant and
// returns the checks and the variant's verdict.
func Hypotheses(hs []Hypothesis, metrics map[string]float64) ([]Check, Verdict, string) {
	var checks []Check
	var violated, missing []string
	for _, h := range hs {
		c := Check{ID: h.ID, Description: h.Description, Metric: h.Metric, Op: h.Op, Threshold: h.Threshold, Optional: h.Optional}
		if h.Best != nil {
			b := Float(*h.Best)
			c.Best = &b
		}
		v, ok := metrics[h.Metric]
		switch {
		case !ok || math.IsNaN(v):
			c.Missing = true
			c.Observed = Float(math.NaN())
			if !h.Optional {
				missing = append(missing, h.ID)
			}
		default:
			c.Observed = Float(v)
			c.Held = Compare(v, h.Op, h.Threshold)
			if !c.Held {
				violated = append(violated, c.String())
			}
		}
		checks = append(checks, c)
	}
	switch {
	case len(violated) > 0:
		return checks, Violated, "violated " + strings.Join(violated, "; ")
	case len(missing) > 0:
		return checks, Inconclusive, "not measured: " + strings.Join(missing, ", ")
	}
	return checks, Held, "every hypothesis held"
}

// Comparison judges metric(numerator)/metric(denominator) op threshold.
func JudgeComparison(c Comparison, byVariant map[string]map[string]float64) Check {
	out := Check{ID: c.ID, Description: c.Description, Metric: fmt.Sprintf("%s(%s)/%s(%s)", c.Metric, c.Numerator, c.Metric, c.Denominator), Op: c.Op, Threshold: c.Threshold}
	n, okN := byVariant[c.Numerator][c.Metric]
	d, okD := byVariant[c.Denominator][c.Metric]
	if !okN || !okD || math.IsNaN(n) || math.IsNaN(d) {
		out.Missing = true
		out.Observed = Float(math.NaN())
		return out
	}
	if math.IsInf(n, 1) && math.IsInf(d, 1) { // e.g. neither fleet recovered
		out.Observed, out.Neither = Float(math.NaN()), true
		return out
	}
	var r float64
	switch {
	case d == 0 && n == 0:
		r = 1
	case d == 0:
		// Guard the ratio: a zero denominator counts as one unit.
		r = n
	default:
		r = n / d
	}
	out.Observed = Float(r)
	out.Held = Compare(r, c.Op, c.Threshold)
	return out
}

// Met reports whether every variant reached its expected verdict and every
// comparison held: the run showed what the scenario says it should.
func Met(outcomes []Outcome, comparisons []Check) bool {
	for _, o := range outcomes {
		if o.Verdict != o.Expect {
			return false
		}
	}
	for _, c := range comparisons {
		if !c.Held {
			return false
		}
	}
	return len(outcomes) > 0
}

// Outcome of one variant, as the scenario verdict needs it.
type Outcome struct {
	Variant string
	Verdict Verdict
	Expect  Verdict
	Reason  string
}

// Scenario combines the variants' verdicts and the comparisons.
//
//   - aborted when any variant was aborted;
//   - for a single-variant run that met its expectation, that variant's
//     verdict (held or violated);
//   - reproduced when every variant reached its expected verdict and every
//     comparison held;
//   - violated when a variant expected to hold was violated (the mitigation
//     does not hold);
//   - held when a variant expected to be violated held (the incident did not
//     reproduce: for a bring-your-own client that is the good news);
//   - inconclusive otherwise (missing measurements, a comparison that failed
//     while each variant behaved as expected).
func Scenario(outcomes []Outcome, comparisons []Check) (Verdict, string) {
	if len(outcomes) == 0 {
		return Inconclusive, "no variant ran"
	}
	var reasons []string
	for _, o := range outcomes {
		if o.Verdict == Aborted {
			return Aborted, fmt.Sprintf("variant %s was aborted: %s", o.Variant, o.Reason)
		}
	}
	allExpected := true
	for _, o := range outcomes {
		if o.Verdict != o.Expect {
			allExpected = false
		}
	}
	var failedCmp []string
	for _, c := range comparisons {
		if !c.Held {
			failedCmp = append(failedCmp, c.String())
		}
	}
	if allExpected && len(failedCmp) == 0 && len(outcomes) == 1 {
		o := outcomes[0]
		return o.Verdict, fmt.Sprintf("%s %s as expected (%s)", o.Variant, o.Verdict, o.Reason)
	}
	if allExpected && len(failedCmp) == 0 {
		for _, o := range outcomes {
			reasons = append(reasons, fmt.Sprintf("%s %s as expected (%s)", o.Variant, o.Verdict, o.Reason))
		}
		for _, c := range comparisons {
			reasons = append(reasons, c.String())
		}
		return Reproduced, strings.Join(reasons, "; ")
	}
	for _, o := range outcomes {
		if o.Expect == Held && o.Verdict == Violated {
			return Violated, fmt.Sprintf("variant %s was expected to hold but %s", o.Variant, o.Reason)
		}
	}
	for _, o := range outcomes {
		if o.Expect == Violated && o.Verdict == Held {
			return Held, fmt.Sprintf("variant %s was expected to break the way the incident did, but every hypothesis held", o.Variant)
		}
	}
	for _, o := range outcomes {
		if o.Verdict != o.Expect {
			reasons = append(reasons, fmt.Sprintf("variant %s: %s (expected %s): %s", o.Variant, o.Verdict, o.Expect, o.Reason))
		}
	}
	if len(failedCmp) > 0 {
		reasons = append(reasons, "comparison failed: "+strings.Join(failedCmp, "; "))
	}
	return Inconclusive, strings.Join(reasons, "; ")
}

// FormatValue prints a measurement compactly.
func FormatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case math.IsNaN(v):
		return "n/a"
	case v == math.Trunc(v) && math.Abs(v) < 1e12:
		return fmt.Sprintf("%d", int64(v))
	case math.Abs(v) >= 1000 && math.Abs(v) < 1e12:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
