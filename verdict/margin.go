package verdict

import (
	"fmt"
	"math"
)

// NearFactor bounds a near miss: a judged figure within this factor of its
// threshold, on either side, is close enough that another run on a busier
// machine could have gone the other way.
const NearFactor = 1.5

// Margin is how far the observed figure lies from the threshold, as a
// factor of at least 1 (observed/threshold or threshold/observed); ok is
// false where no factor means anything: a missing figure, an infinite one
// ("never"), a threshold of 0, a figure of 0 or of the other sign. Where
// the metric has a best value (a share's 1 or 0), both are counted from
// it: 0.676 against at least 0.95 is 0.324 short of 1 where 0.05 is
// allowed, 6.5x; 0.99 is 5x inside. A figure at its best has no factor.
func (c Check) Margin() (factor float64, ok bool) {
	obs, thr := float64(c.Observed), c.Threshold
	if c.Best != nil {
		b := float64(*c.Best)
		obs, thr = math.Abs(b-obs), math.Abs(b-thr)
	}
	if c.Missing || !finite(obs) || thr == 0 || obs == 0 || (obs > 0) != (thr > 0) {
		return 0, false
	}
	f := obs / thr
	if f < 1 {
		f = 1 / f
	}
	return f, true
}

// Near says whether the figure came within NearFactor of its threshold;
// a figure at the best value its metric can take (100% against at least
// 95%) has no factor (Margin) and is not near: no run could do better.
func (c Check) Near() bool {
	f, ok := c.Margin()
	return ok && f <= NearFactor
}

// MarginText says where the figure lies against the threshold in words:
// "1.9x over the threshold", "6.5x under the threshold", "on the
// threshold"; for a metric with a best value, counted from it: "6.5x
// past the threshold, counted from 1", "5x inside the threshold, counted
// from 1"; "" when Margin has no factor.
func (c Check) MarginText() string {
	f, ok := c.Margin()
	if !ok {
		return ""
	}
	obs := math.Abs(float64(c.Observed))
	switch {
	case obs == math.Abs(c.Threshold):
		return "on the threshold"
	case c.Best != nil && c.Held:
		return fmt.Sprintf("%sx inside the threshold, counted from %s", FormatFactor(f), FormatValue(float64(*c.Best)))
	case c.Best != nil:
		return fmt.Sprintf("%sx past the threshold, counted from %s", FormatFactor(f), FormatValue(float64(*c.Best)))
	case obs > math.Abs(c.Threshold):
		return fmt.Sprintf("%sx over the threshold", FormatFactor(f))
	}
	return fmt.Sprintf("%sx under the threshold", FormatFactor(f))
}

// FormatFactor prints a factor with two significant figures: 1.1, 3.5, 18.
func FormatFactor(f float64) string {
	if f >= 10 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2g", f)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
