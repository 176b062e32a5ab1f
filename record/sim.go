package record

import "github.com/chaoslab/chaoslab/verdict"

// IncidentRow puts a number the write-up publishes next to what a model
// gave at the incident's scale, with the band counted as agreement.
type IncidentRow struct {
	// What the write-up says, in our words, with its figure.
	Incident  string `json:"incident"`
	Published string `json:"published"` // the figure as the write-up gives it, e.g. "about 13%"
	// Number names the figure in the case record (seeds/<id>.yaml numbers).
	Number  string `json:"number,omitempty"`
	Metric  string `json:"metric"`
	Variant string `json:"variant"`
	// Against is what the figure comes from: "" for the write-up, or e.g.
	// "harness run" for a calibrated run compared with its harness run.
	Against string `json:"against,omitempty"`
	// Simulated is the model's figure in Unit.
	Simulated verdict.Float `json:"simulated"`
	Unit      string        `json:"unit,omitempty"`
	// Low and High bound the agreement band (inclusive).
	Low     verdict.Float `json:"low"`
	High    verdict.Float `json:"high"`
	Matches bool          `json:"matches"`
	Note    string        `json:"note,omitempty"`
}

// Map is a metastability map: the outcome of one model variant over a grid
// of trigger settings (X across, Y up), with the incident's own point.
type Map struct {
	Title   string    `json:"title"`
	Variant string    `json:"variant"`
	XName   string    `json:"x_name"`
	YName   string    `json:"y_name"`
	X       []float64 `json:"x"`
	Y       []float64 `json:"y"`
	// Outcomes[j][i] is the outcome at X[i], Y[j]: recovered, recovered
	// slowly, stayed down (sim.Outcome's words).
	Outcomes [][]string `json:"outcomes"`
	// The incident's point, in X and Y units.
	IncidentX float64 `json:"incident_x"`
	IncidentY float64 `json:"incident_y"`
	Note      string  `json:"note,omitempty"`
	// Runs and Seconds: how many model runs the map took, and how long.
	Runs    int     `json:"runs"`
	Seconds float64 `json:"seconds"`
}
