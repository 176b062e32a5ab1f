package lab

import "github.com/chaoslab/chaoslab/verdict"

// Float is a float64 whose JSON form can carry +Inf, -Inf and NaN
// (verdict.Float).
type Float = verdict.Float
