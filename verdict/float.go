package verdict

import "github.com/chaoslab/chaoslab/harness/lab"

// Float is a float64 whose JSON form can carry +Inf, -Inf and NaN
// (lab.Float).
type Float = lab.Float
