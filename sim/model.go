package sim

import "fmt"

// The shape every incident model shares, so that `chaoslab sim` can run,
// chart and sweep any of them: a model's typed result summarises itself as
// a Result.

// Outcome is where a run ended, for the metastability maps: the system
// recovered by itself once the trigger was gone, recovered only slowly (or
// only through the operators' action), or stayed down.
type Outcome uint8

const (
	OutcomeUnknown Outcome = iota
	// Recovered: back to normal within the model's "quick" bound once the
	// trigger ended.
	Recovered
	// RecoveredSlowly: back to normal, but only after the quick bound.
	RecoveredSlowly
	// StayedDown: not back to normal by the end of the horizon: a
	// metastable failure, sustained by the system's own work.
	StayedDown
)

func (o Outcome) String() string {
	switch o {
	case Recovered:
		return "recovered"
	case RecoveredSlowly:
		return "recovered slowly"
	case StayedDown:
		return "stayed down"
	}
	return "unknown"
}

// Trace is one sampled series of a run: V[i] at virtual time T[i] seconds.
type Trace struct {
	Name   string // e.g. fleet.routing_share, proxies.alive
	Source string // what it is of, e.g. fleet, zone
	Unit   string
	T, V   []float64
}

// Result is a run summarised for reports and sweeps.
type Result struct {
	Series  []Trace
	Metrics map[string]float64
	Outcome Outcome
	// Why says how Outcome was decided, in a sentence.
	Why    string
	Events uint64
}

// Summary summarises a Kinesis run. quick is the recovery time (s after the
// restart began) under which the fleet counts as having recovered quickly.
func (r KinesisResult) Summary(quick float64) Result {
	out := Result{
		Series: []Trace{{Name: "fleet.routing_share", Source: "fleet", Unit: "share", T: r.T, V: r.Routing}},
		Metrics: map[string]float64{
			"fleet.max_threads": float64(r.MaxThreads),
			"fleet.over_limit":  float64(r.OverLimit),
			"fleet.removals":    float64(r.Removals),
			"fleet.recovered_s": r.Recovered,
			"sim.events":        float64(r.Events),
		},
		Events: r.Events,
	}
	switch {
	case r.Recovered <= quick:
		out.Outcome, out.Why = Recovered, fmt.Sprintf("every original server routing %.0f s after the restart began (quick: ≤ %.0f s)", r.Recovered, quick)
	case r.Recovered < 1e300:
		out.Outcome, out.Why = RecoveredSlowly, fmt.Sprintf("every original server routing only %.0f min after the restart began", r.Recovered/60)
	default:
		out.Outcome, out.Why = StayedDown, "not every original server routing again by the end of the horizon"
	}
	return out
}
