package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/chaoslab/chaoslab/verdict"
)

// The verdict in plain language: one paragraph a newcomer reads first,
// with every figure that decided it, how far each lay from its threshold,
// and the near misses (verdict.NearFactor) named as such.

// verdictStory is that paragraph, and the near misses on their own.
func verdictStory(r *Report) (story string, near []string) {
	var parts []string
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		parts = append(parts, variantStory(v, r.MetricSources))
		for _, c := range v.Hypotheses {
			if c.Near() {
				near = append(near, fmt.Sprintf("%s in %s (%s)", c.ID, v.Name, figureWords(c, false, unitOf(r.MetricSources, c))))
			}
		}
	}
	for _, c := range r.Comparisons {
		parts = append(parts, comparisonStory(c))
		if c.Near() {
			near = append(near, fmt.Sprintf("comparison %s (%s)", c.ID, figureWords(c, false, "")))
		}
	}
	switch {
	case len(near) > 0:
		// Named in their sentences; the page flags them again below.
	case hasJudged(r):
		parts = append(parts, fmt.Sprintf("No judged figure came within %gx of its threshold.", verdict.NearFactor))
	}
	return strings.Join(parts, " "), near
}

// variantStory says what one variant did, in a sentence or two, its
// figures in their metrics' units.
func variantStory(v *VariantResult, units map[string]MetricSource) string {
	name := fmt.Sprintf("The %s variant", v.Name)
	if v.Expect != "" {
		name += fmt.Sprintf(" (expected to %s)", v.Expect.Infinitive())
	}
	switch {
	case v.Verdict == verdict.Aborted:
		return fmt.Sprintf("%s was interrupted: %s.", name, strings.TrimSuffix(v.Reason, "."))
	case v.LabError != "":
		return fmt.Sprintf("%s cannot be judged: the lab failed (%s).", name, strings.TrimSuffix(v.LabError, "."))
	}
	violated, missing, held := splitChecks(v.Hypotheses)
	n := len(v.Hypotheses)
	switch {
	case len(violated) > 0:
		s := fmt.Sprintf("%s broke %d of its %d hypotheses: %s.", name, len(violated), n, figures(violated, units))
		if len(missing) > 0 {
			s += fmt.Sprintf(" Not measured: %s.", ids(missing))
		}
		return s
	case len(missing) > 0:
		return fmt.Sprintf("%s cannot be judged: %s not measured.", name, ids(missing))
	case len(held) == 0:
		return fmt.Sprintf("%s has no hypothesis to judge.", name)
	}
	closest := closestHeld(held)
	s := fmt.Sprintf("%s held all %d hypotheses", name, len(held))
	if _, ok := closest.Margin(); ok {
		s += fmt.Sprintf("; the closest was %s", checkFigure(closest, unitOf(units, closest)))
	}
	return s + "."
}

// variantWhy is a variant's verdict in one short line, for tables.
func variantWhy(v *VariantResult) string {
	if v.Verdict == verdict.Aborted || v.LabError != "" {
		return v.Reason
	}
	violated, missing, held := splitChecks(v.Hypotheses)
	var parts []string
	if len(violated) > 0 {
		parts = append(parts, fmt.Sprintf("broke %d of %d: %s", len(violated), len(v.Hypotheses), ids(violated)))
	}
	if len(missing) > 0 {
		parts = append(parts, "not measured: "+ids(missing))
	}
	if len(violated) == 0 && len(missing) == 0 && len(held) > 0 {
		parts = append(parts, fmt.Sprintf("held all %d", len(held)))
	}
	var near []string
	for _, c := range v.Hypotheses {
		if c.Near() {
			near = append(near, c.ID)
		}
	}
	if len(near) > 0 {
		parts = append(parts, "near miss: "+strings.Join(near, ", "))
	}
	if len(parts) == 0 {
		return v.Reason
	}
	return strings.Join(parts, "; ")
}

func comparisonStory(c verdict.Check) string {
	switch {
	case c.Missing:
		return fmt.Sprintf("The comparison %s could not be made (a figure is missing).", c.ID)
	case c.Neither:
		return fmt.Sprintf("The comparison %s failed: neither variant's figure was ever reached (%s: never in both), so neither is a multiple of the other.", c.ID, c.Metric)
	case c.Held:
		return fmt.Sprintf("The comparison %s held: the ratio was %s.", c.ID, figureWords(c, true, ""))
	}
	return fmt.Sprintf("The comparison %s failed: the ratio was %s.", c.ID, figureWords(c, true, ""))
}

// checkFigure is one judged figure with its threshold and margin, in
// words: "outstanding-bounded (servers never queue more than 150
// requests): 530 requests, where it must stay at or below 150 requests
// (3.5x over the threshold)".
func checkFigure(c verdict.Check, unit string) string {
	name := c.ID
	if d := strings.TrimSuffix(strings.TrimSpace(c.Description), "."); d != "" {
		name += " (" + d + ")"
	}
	return name + ": " + figureWords(c, true, unit)
}

// figureWords is the figure against its threshold in unit, without the
// check's id; flagNear names a near miss as such.
func figureWords(c verdict.Check, flagNear bool, unit string) string {
	if c.Missing {
		return "not measured"
	}
	obs := withUnit(float64(c.Observed), unit)
	if math.IsInf(float64(c.Observed), 1) {
		obs = "never reached"
	}
	s := fmt.Sprintf("%s, where it must %s %s", obs, opWords(c.Op), withUnit(c.Threshold, unit))
	if m := c.MarginText(); m != "" {
		if flagNear && c.Near() {
			m += ": a near miss"
		}
		s += " (" + m + ")"
	}
	return s
}

func opWords(op string) string {
	switch op {
	case "<=":
		return "stay at or below"
	case "<":
		return "stay below"
	case ">=":
		return "be at least"
	case ">":
		return "be above"
	case "==":
		return "be"
	}
	return op
}

func splitChecks(cs []verdict.Check) (violated, missing, held []verdict.Check) {
	for _, c := range cs {
		switch {
		case c.Missing && c.Optional:
		case c.Missing:
			missing = append(missing, c)
		case c.Held:
			held = append(held, c)
		default:
			violated = append(violated, c)
		}
	}
	return violated, missing, held
}

func figures(cs []verdict.Check, units map[string]MetricSource) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = checkFigure(c, unitOf(units, c))
	}
	return strings.Join(out, "; ")
}

func ids(cs []verdict.Check) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return strings.Join(out, ", ")
}

func hasJudged(r *Report) bool {
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		for _, c := range v.Hypotheses {
			if !c.Missing {
				return true
			}
		}
	}
	return len(r.Comparisons) > 0
}

// unitOf is the unit a check's metric is in ("" when the record keeps none).
func unitOf(units map[string]MetricSource, c verdict.Check) string {
	return units[c.Metric].Unit
}

// withUnit writes a figure with its unit: "530 requests", "24.3 s"; a
// share, a 0/1 state or a figure with no unit stays bare.
func withUnit(v float64, unit string) string {
	s := verdict.FormatValue(v)
	switch unit {
	case "", "share", "0/1", "u", "ratio":
		return s
	}
	return s + " " + unit
}

// closestHeld is the held check nearest its threshold (the first, when
// none has a factor); held is not empty.
func closestHeld(held []verdict.Check) verdict.Check {
	closest := held[0]
	for _, c := range held[1:] {
		f, ok := c.Margin()
		g, gok := closest.Margin()
		if ok && (!gok || f < g) {
			closest = c
		}
	}
	return closest
}
