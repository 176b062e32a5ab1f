package training

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/reports"
)

// before is how far back a prediction's baseline reaches.
const before = 15.0

// Debrief compares the session with the run's report r (one variant: the
// one played).
func (s *Session) Debrief(r *reports.Report) *reports.Debrief {
	if len(r.Variants) == 0 {
		return nil
	}
	v := r.Variants[0]
	s.mu.Lock()
	answers, opened := slices.Clone(s.answers), maps.Clone(s.opened)
	s.mu.Unlock()
	runT := func(w time.Time) float64 { return w.Sub(v.StartedAt).Seconds() }
	d := &reports.Debrief{Trainee: s.Trainee, DiagnosedAfter: -1, ReadNext: s.Plan.ReadNext,
		Outcome: fmt.Sprintf("The run's verdict on variant %s: %s.", v.Name, v.Verdict)}
	first := firstFault(v)
	for _, e := range s.Plan.Timeline {
		d.Reveal = append(d.Reveal, reports.DebriefTimelineRow{At: first + e.At, Clock: e.Clock, Event: e.Event})
	}
	d.Predictions = s.predictions(v, answers, opened, runT)
	d.Diagnosis, d.DiagnosedAfter = s.diagnosis(answers, runT, first)
	d.Actions = s.actions(v)
	score(d)
	return d
}

// firstFault is the run time of the timeline's first fault.
func firstFault(v *reports.VariantResult) float64 {
	first := math.Inf(1)
	for _, f := range v.Faults {
		if !f.IsAction() {
			first = math.Min(first, f.Start)
		}
	}
	if math.IsInf(first, 1) {
		return 0
	}
	return first
}

// predictions judges each predicting checkpoint's last answer by the
// series' mean over the 15 s before it opened against the mean from it
// to the next checkpoint (or the run's end).
func (s *Session) predictions(v *reports.VariantResult, answers []Answer, opened map[string]time.Time, runT func(time.Time) float64) []reports.DebriefPrediction {
	var times []float64
	for _, t := range opened {
		times = append(times, runT(t))
	}
	sort.Float64s(times)
	var out []reports.DebriefPrediction
	for _, cp := range s.Plan.Checkpoints {
		o, ok := opened[cp.ID]
		if !cp.Predict || !ok {
			continue
		}
		at := runT(o)
		row := reports.DebriefPrediction{Checkpoint: cp.ID, At: at, Measured: "no answer"}
		if a, ok := lastAnswer(answers, cp.ID, func(a Answer) bool { return a.Series != "" }); ok {
			row.Series, row.Said = a.Series, a.Direction
			row.Measured, row.Detail = measured(v, a.Series, at, nextAfter(times, at))
			row.Right = row.Said == row.Measured
		}
		out = append(out, row)
	}
	return out
}

func nextAfter(times []float64, at float64) float64 {
	for _, t := range times {
		if t > at+1 {
			return t
		}
	}
	return math.Inf(1)
}

func lastAnswer(answers []Answer, cp string, ok func(Answer) bool) (Answer, bool) {
	for i := len(answers) - 1; i >= 0; i-- {
		if answers[i].Checkpoint == cp && ok(answers[i]) {
			return answers[i], true
		}
	}
	return Answer{}, false
}

// measured reads the series' change: rise or fall when the mean after
// differs from the mean before by more than a fifth, else steady.
func measured(v *reports.VariantResult, name string, at, next float64) (string, string) {
	b, nb := mean(v, name, at-before, at)
	a, na := mean(v, name, at, next)
	if nb == 0 || na == 0 {
		return "no samples", fmt.Sprintf("%d samples before, %d after", nb, na)
	}
	end := "the end"
	if !math.IsInf(next, 1) {
		end = fmt.Sprintf("%.0f s", next)
	}
	detail := fmt.Sprintf("mean %.3g over the 15 s before, %.3g from %.0f s to %s", b, a, at, end)
	tol := 0.2 * math.Max(math.Abs(b), 1e-9)
	switch {
	case a > b+tol:
		return "rise", detail
	case a < b-tol:
		return "fall", detail
	}
	return "steady", detail
}

func mean(v *reports.VariantResult, name string, from, to float64) (float64, int) {
	sum, n := 0.0, 0
	prefix, isPrefix := strings.CutSuffix(name, "*")
	for _, s := range v.Series {
		if s.Name != name && !(isPrefix && strings.HasPrefix(s.Name, prefix)) {
			continue
		}
		for _, p := range s.Points {
			if x := float64(p.V); p.T >= from && p.T < to && !math.IsNaN(x) {
				sum, n = sum+x, n+1
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

func (s *Session) diagnosis(answers []Answer, runT func(time.Time) float64, first float64) (reports.DebriefDiagnosis, float64) {
	d := reports.DebriefDiagnosis{}
	after := -1.0
	for _, a := range answers {
		c, ok := s.cause(a.Cause)
		if !ok {
			continue
		}
		d.Chosen, d.Right, d.Note = c.Text, c.real, c.note
		if c.real && after < 0 {
			after = math.Max(runT(a.Wall)-first, 0)
		}
	}
	for _, c := range s.Plan.Causes {
		if c.real {
			d.Cause = c.Text
		}
	}
	if d.Right {
		d.Note = ""
	}
	return d, after
}

func (s *Session) cause(id string) (Cause, bool) {
	for _, c := range s.Plan.Causes {
		if c.ID == id && id != "" {
			return c, true
		}
	}
	return Cause{}, false
}

// actions puts each of the responders' actions beside what the trainee
// did of its kind, then the trainee's other actions.
func (s *Session) actions(v *reports.VariantResult) []reports.DebriefAction {
	taken := map[string][]string{}
	var kinds []string
	for _, f := range v.Faults {
		if !f.IsAction() {
			continue
		}
		k := faults.ResponderKind(f.Fault, f.Target)
		if _, seen := taken[k]; !seen {
			kinds = append(kinds, k)
		}
		taken[k] = append(taken[k], fmt.Sprintf("%s %s at %.0f s (%s)", f.Fault, f.Target, f.Start, f.Detail))
	}
	var out []reports.DebriefAction
	done := map[string]bool{}
	for _, r := range s.Plan.Responders {
		row := reports.DebriefAction{Kind: r.Kind, Responders: r.Text, Matched: len(taken[r.Kind]) > 0}
		if r.Clock != "" {
			row.Responders = r.Clock + ": " + r.Text
		}
		row.Trainee = strings.Join(taken[r.Kind], "; ")
		if !row.Matched && !Doable(r.Kind) {
			row.Note = "The lab has no action of this kind yet."
		}
		out = append(out, row)
		done[r.Kind] = true
	}
	for _, k := range kinds {
		if !done[k] {
			kind := k
			if kind == "" {
				kind = "other"
			}
			out = append(out, reports.DebriefAction{Kind: kind, Trainee: strings.Join(taken[k], "; "), Note: "The responders did not do this."})
		}
	}
	return out
}

// Doable: some registered fault is an action of this kind.
func Doable(kind string) bool {
	for _, f := range faults.Names() {
		for _, t := range []string{"leader", "clients", "fleet", "servers", "agents"} {
			if faults.ResponderKind(f, t) == kind {
				return true
			}
		}
	}
	return false
}

// score: a point per right prediction and per responders' action the
// lab could take that the trainee took, two for the right diagnosis.
func score(d *reports.Debrief) {
	d.Score, d.Max = 0, 2
	for _, p := range d.Predictions {
		d.Max++
		if p.Right {
			d.Score++
		}
	}
	if d.Diagnosis.Right {
		d.Score += 2
	}
	for _, a := range d.Actions {
		if a.Responders == "" {
			continue
		}
		if a.Matched {
			d.Score++
		}
		if a.Matched || a.Note == "" {
			d.Max++
		}
	}
}

// Finish writes the debrief into the run's report and tells the
// dashboard where it is.
func (s *Session) Finish(r *reports.Report) error {
	r.Debrief = s.Debrief(r)
	if err := reports.Write(r, r.Dir); err != nil {
		return fmt.Errorf("write debrief: %w", err)
	}
	s.Done(filepath.Join(r.Dir, "index.html"))
	return nil
}
