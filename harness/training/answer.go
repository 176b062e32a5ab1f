package training

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Anytime is the checkpoint of a diagnosis given between checkpoints.
const Anytime = "anytime"

// Answer records a trainee's answer, refusing one that names no open
// checkpoint, no known series or direction, or no candidate cause.
func (s *Session) Answer(a Answer) error {
	a.Wall = time.Now()
	cp, err := s.checkpoint(a.Checkpoint)
	if err != nil {
		return err
	}
	if a.Series == "" && a.Cause == "" {
		return errors.New("answer: give a prediction (series and direction) or a diagnosis (cause)")
	}
	if a.Series != "" || a.Direction != "" {
		if !cp.Predict {
			return fmt.Errorf("answer: checkpoint %s asks for no prediction", cp.ID)
		}
		if !slices.ContainsFunc(s.Plan.Series, func(d lab.SeriesDef) bool { return d.Name == a.Series }) {
			return fmt.Errorf("answer: series %q is not one of the charts' series", a.Series)
		}
		if !slices.Contains(Directions, a.Direction) {
			return fmt.Errorf("answer: direction %q: want %s", a.Direction, strings.Join(Directions, ", "))
		}
	}
	if a.Cause != "" {
		if !cp.Diagnose {
			return fmt.Errorf("answer: checkpoint %s asks for no diagnosis", cp.ID)
		}
		if !slices.ContainsFunc(s.Plan.Causes, func(c Cause) bool { return c.ID == a.Cause }) {
			return fmt.Errorf("answer: no cause %q", a.Cause)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, a)
	s.changedLocked()
	return nil
}

// checkpoint is the open checkpoint id names; Anytime is a diagnosis
// once the first fault has started.
func (s *Session) checkpoint(id string) (Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == Anytime {
		if s.first.IsZero() {
			return Checkpoint{}, errors.New("answer: the incident has not started yet")
		}
		return Checkpoint{ID: Anytime, Diagnose: true}, nil
	}
	for _, cp := range s.Plan.Checkpoints {
		if cp.ID != id {
			continue
		}
		if _, ok := s.opened[id]; !ok {
			return Checkpoint{}, fmt.Errorf("answer: checkpoint %s is not open yet", id)
		}
		return cp, nil
	}
	return Checkpoint{}, fmt.Errorf("answer: no checkpoint %q", id)
}

// Answers are the trainee's answers so far.
func (s *Session) Answers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

// State is what the dashboard shows of the session: never which cause is
// right, and of the incident's timeline only what the run has reached.
type State struct {
	Case        string          `json:"case"`
	Trainee     string          `json:"trainee"`
	Elapsed     float64         `json:"elapsed_s"` // since the first fault; -1 before
	Open        []Checkpoint    `json:"open"`
	Answered    []string        `json:"answered"`
	Diagnosed   bool            `json:"diagnosed"`
	Causes      []Cause         `json:"causes"`
	Series      []lab.SeriesDef `json:"series"`
	Timeline    []Entry         `json:"timeline"`
	Checkpoints int             `json:"checkpoints"`
	Debrief     string          `json:"debrief,omitempty"`
}

// State returns the session's state now.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Case: s.Plan.Case, Trainee: s.Trainee, Elapsed: -1, Causes: s.Plan.Causes, Series: s.Plan.Series, Checkpoints: len(s.Plan.Checkpoints), Debrief: s.done,
		Open: []Checkpoint{}, Answered: []string{}, Timeline: []Entry{}}
	if !s.first.IsZero() {
		st.Elapsed = time.Since(s.first).Seconds()
	}
	for _, cp := range s.Plan.Checkpoints {
		_, opened := s.opened[cp.ID]
		switch {
		case s.answeredLocked(cp.ID):
			st.Answered = append(st.Answered, cp.ID)
		case opened:
			st.Open = append(st.Open, cp)
		}
	}
	st.Diagnosed = slices.ContainsFunc(s.answers, func(a Answer) bool { return a.Cause != "" })
	for _, e := range s.Plan.Timeline {
		if st.Elapsed >= e.At && s.revealedLocked(e.Reveals) {
			st.Timeline = append(st.Timeline, e)
		}
	}
	return st
}

// revealedLocked says whether the trainee may see what an entry gives
// away: the outcome once they have predicted it at the first signs, the
// cause once they have given a diagnosis; everything once the run ended.
func (s *Session) revealedLocked(what string) bool {
	switch {
	case what == "" || s.done != "":
		return true
	case what == "outcome":
		return s.answeredLocked("signs")
	case what == "cause":
		return slices.ContainsFunc(s.answers, func(a Answer) bool { return a.Cause != "" })
	}
	return false
}

// Done tells the session where its debrief is.
func (s *Session) Done(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = path
	s.changedLocked()
}
