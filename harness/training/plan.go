// Package training turns a scenario into a training session (chaoslab
// train): the trainee watches the run as the responders watched the
// incident, without its cause, is asked at checkpoints what will happen
// next and what the cause is, may act on the real stack, and is debriefed
// against what the run measured and what the write-up says the
// responders did.
package training

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// Plan is what a training session asks and reveals, and when.
type Plan struct {
	Case        string       `json:"case"`
	Title       string       `json:"title"`
	Checkpoints []Checkpoint `json:"checkpoints"`
	// Causes are the candidate diagnoses, shuffled by the run's seed; the
	// dashboard never sees which one is right.
	Causes []Cause `json:"causes"`
	// Series are what a prediction may be about: the charts' series.
	Series []lab.SeriesDef `json:"series"`
	// Timeline is the case record's timeline on the run's clock: seconds
	// after the first fault's start.
	Timeline   []Entry        `json:"timeline"`
	Responders []Responder    `json:"-"`
	ReadNext   []reports.Link `json:"-"`
	Span       float64        `json:"span_s"` // first fault's start to the planned end
	record     *seeds.Record
}

// Checkpoint is a moment the trainee is asked something. One with Before
// holds the timeline before that step until answered (or timed out);
// "signs" opens After seconds into the first fault and holds nothing.
type Checkpoint struct {
	ID       string  `json:"id"`
	Title    string  `json:"title"`
	Step     int     `json:"step"` // the step it holds before (1-based); 0: the end; -1: none
	After    float64 `json:"after_s,omitempty"`
	Predict  bool    `json:"predict"`
	Diagnose bool    `json:"diagnose"`
}

// Cause is a candidate diagnosis.
type Cause struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	real bool
	note string
}

// Entry is an entry of the case record's timeline on the run's clock.
type Entry struct {
	At    float64 `json:"at_s"`
	Clock string  `json:"clock"`
	Event string  `json:"event"`
	// Reveals is what the entry gives away (seeds.RevealKinds): it is
	// shown only once the trainee has answered that.
	Reveals string `json:"-"`
}

// Responder is one of the responders' actions.
type Responder struct {
	Kind, Text, Clock string
}

// SignsAfter is how long into the first fault the first checkpoint opens.
const SignsAfter = 10 * time.Second

// NewPlan builds the session for scenario s on case record rec: the
// checkpoints from the timeline's steps, the causes from rec and the
// other cases' records (others), the series from charts.
func NewPlan(s *scenarios.Scenario, rec *seeds.Record, others []*seeds.Record, charts []lab.SeriesDef, seed int64) (*Plan, error) {
	if rec == nil {
		return nil, fmt.Errorf("plan training: scenario %s names no case record", s.ID)
	}
	p := &Plan{Case: rec.ID, Title: rec.Title, Series: charts, record: rec}
	p.Checkpoints = checkpoints(s)
	p.Causes = causes(rec, others, seed)
	p.Span = span(s)
	p.Timeline = onRunClock(rec, p.Span)
	p.Responders = responders(rec)
	p.ReadNext = readNext(rec, s)
	return p, nil
}

func checkpoints(s *scenarios.Scenario) []Checkpoint {
	out := []Checkpoint{{ID: "signs", Title: "First signs: what will happen next?", Step: -1, After: SignsAfter.Seconds(), Predict: true}}
	for i := 1; i < len(s.Timeline.Faults); i++ {
		out = append(out, Checkpoint{ID: fmt.Sprintf("step-%d", i+1), Title: "The incident goes on: what will happen next, and why?", Step: i + 1, Predict: true, Diagnose: true})
	}
	return append(out, Checkpoint{ID: "diagnosis", Title: "Before the run ends: what was the cause?", Step: 0, Diagnose: true})
}

// span is the planned time from the first fault's start to the end.
func span(s *scenarios.Scenario) float64 {
	first, end := s.Timeline.Faults[0].At.D(), time.Duration(0)
	for _, f := range s.Timeline.Faults {
		end = max(end, f.At.D()+f.Duration.D())
	}
	return (end - first + s.Timeline.Observe.D()).Seconds()
}

func causes(rec *seeds.Record, others []*seeds.Record, seed int64) []Cause {
	out := []Cause{{Text: causeOf(rec), real: true}}
	if rec.Training != nil {
		for _, d := range rec.Training.Decoys {
			note := "A signal the write-up names, which points elsewhere"
			if d.Held != "" {
				note = "The responders held this first (" + d.Held + ")"
			}
			if d.Signal != "" {
				note += "; in the lab: " + d.Signal
			}
			out = append(out, Cause{Text: d.Text, note: note + "."})
		}
	}
	for _, o := range others {
		if o.ID != rec.ID {
			out = append(out, Cause{Text: causeOf(o), note: "That was the cause of another incident, " + o.ID + "."})
		}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x7a11))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		out[i].ID = fmt.Sprintf("c%d", i+1)
	}
	return out
}

func causeOf(r *seeds.Record) string {
	if r.Training != nil && r.Training.Cause != "" {
		return strings.Join(strings.Fields(r.Training.Cause), " ")
	}
	return strings.Join(strings.Fields(r.Trigger), " ")
}

func responders(rec *seeds.Record) []Responder {
	var out []Responder
	for _, t := range rec.Timeline {
		for _, a := range t.Actions {
			out = append(out, Responder{Kind: a.Kind, Text: strings.Join(strings.Fields(a.Source), " "), Clock: t.At})
		}
	}
	if rec.Training != nil {
		for _, a := range rec.Training.Responders {
			out = append(out, Responder{Kind: a.Kind, Text: a.Text})
		}
	}
	return out
}

func readNext(rec *seeds.Record, s *scenarios.Scenario) []reports.Link {
	var out []reports.Link
	for _, src := range rec.Sources {
		out = append(out, reports.Link{Text: "The write-up (" + src.Kind + ")", URL: src.URL})
	}
	return append(out, reports.Link{Text: "The case record, seeds/" + strings.ToLower(rec.ID) + ".yaml: the chain of causes and the lessons", URL: "https://github.com/chaoslab/chaoslab/blob/main/seeds/" + strings.ToLower(rec.ID) + ".yaml"},
		reports.Link{Text: "The scenario's mitigated variant, scenarios/" + s.ID + ".yaml", URL: "https://github.com/chaoslab/chaoslab/blob/main/scenarios/" + s.ID + ".yaml"})
}
