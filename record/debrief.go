package record

// Debrief is a training session's end (`chaoslab train`): the trainee's
// predictions, diagnosis and actions side by side with what the run
// measured and what the write-up says the responders did.
type Debrief struct {
	Trainee string `json:"trainee"`
	Score   int    `json:"score"`
	Max     int    `json:"max"`
	// DiagnosedAfter is the seconds from the first fault to the trainee's
	// first right diagnosis; negative when they never gave it.
	DiagnosedAfter float64 `json:"diagnosed_after_s"`
	// Outcome is what the run's verdict says of the variant played.
	Outcome     string               `json:"outcome"`
	Predictions []DebriefPrediction  `json:"predictions"`
	Diagnosis   DebriefDiagnosis     `json:"diagnosis"`
	Actions     []DebriefAction      `json:"actions"`
	Reveal      []DebriefTimelineRow `json:"reveal,omitempty"`
	ReadNext    []Link               `json:"read_next,omitempty"`
}

// DebriefPrediction is one prediction against the measured change.
type DebriefPrediction struct {
	Checkpoint string  `json:"checkpoint"`
	At         float64 `json:"at_s"`
	Series     string  `json:"series"`
	Said       string  `json:"said"`     // rise, fall, steady, or "" (no answer)
	Measured   string  `json:"measured"` // rise, fall, steady, or "no samples"
	Detail     string  `json:"detail"`   // the figures the measured change is read from
	Right      bool    `json:"right"`
}

// DebriefDiagnosis is the trainee's last diagnosis against the cause.
type DebriefDiagnosis struct {
	Chosen string `json:"chosen"`
	Cause  string `json:"cause"`
	Right  bool   `json:"right"`
	// Note says where a wrong answer came from (the responders' own first
	// hypothesis, another incident's cause).
	Note string `json:"note,omitempty"`
}

// DebriefAction is one of the responders' actions, and what the trainee
// did of that kind; or one of the trainee's with no responders'
// counterpart.
type DebriefAction struct {
	Kind       string `json:"kind"`
	Responders string `json:"responders,omitempty"`
	Trainee    string `json:"trainee,omitempty"`
	Matched    bool   `json:"matched"`
	Note       string `json:"note,omitempty"`
}

// DebriefTimelineRow is an entry of the case record's timeline and when
// the run revealed it.
type DebriefTimelineRow struct {
	At    float64 `json:"at_s"`
	Clock string  `json:"clock"`
	Event string  `json:"event"`
}

// Link is a titled address.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}
