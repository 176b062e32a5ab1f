package training

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/runner"
)

// DefaultHold is the longest a checkpoint holds the timeline for an answer.
const DefaultHold = 5 * time.Minute

// Session is one trainee's run of a Plan: a runner.Steer that wraps the
// game day's controls, opens the checkpoints as the timeline reaches
// them, holds the timeline at those that ask for it until answered, and
// keeps the answers.
type Session struct {
	Plan    *Plan
	Trainee string
	// Hold is the longest a checkpoint waits for an answer.
	Hold time.Duration
	base runner.Steer

	mu      sync.Mutex
	changed chan struct{}
	steps   int
	first   time.Time            // wall time of the first fault step
	opened  map[string]time.Time // checkpoint id -> when it opened
	answers []Answer
	done    string // the debrief's address, once written
}

// Answer is what the trainee said at a checkpoint.
type Answer struct {
	Checkpoint string    `json:"checkpoint"`
	Wall       time.Time `json:"wall"`
	Series     string    `json:"series,omitempty"`
	Direction  string    `json:"direction,omitempty"` // rise, fall, steady
	Cause      string    `json:"cause,omitempty"`     // a Cause's id
	Note       string    `json:"note,omitempty"`
}

// Directions are what a prediction may say of a series.
var Directions = []string{"rise", "fall", "steady"}

// NewSession starts a trainee's session of p over the controls base.
func NewSession(p *Plan, trainee string, base runner.Steer) *Session {
	return &Session{Plan: p, Trainee: trainee, Hold: DefaultHold, base: base, changed: make(chan struct{}), opened: map[string]time.Time{}}
}

// Actions implements runner.Steer: the operators' (and the trainee's).
func (s *Session) Actions() <-chan runner.Action { return s.base.Actions() }

// Stopped implements runner.EmergencyStopper: the controls' (a nil
// channel, never closed, when they have none).
func (s *Session) Stopped() <-chan struct{} {
	if es, ok := s.base.(runner.EmergencyStopper); ok {
		return es.Stopped()
	}
	return nil
}

// Wait implements runner.Steer: the controls decide when the next step
// is due; then a checkpoint before that step holds it until answered.
func (s *Session) Wait(ctx context.Context, variant string, t time.Time, next string) runner.Go {
	g := s.base.Wait(ctx, variant, t, next)
	if !g.OK || g.End {
		return g
	}
	step := 0
	s.mu.Lock()
	if next != "end" {
		s.steps++
		step = s.steps
	}
	s.mu.Unlock()
	if step == 1 {
		s.startSigns()
		return g
	}
	cp, ok := s.checkpointBefore(step)
	if !ok {
		return g
	}
	held := time.Now()
	if !s.await(ctx, cp) {
		return runner.Go{Notes: g.Notes}
	}
	g.Notes = append(g.Notes, fmt.Sprintf("timeline held %.1fs for the trainee at checkpoint %s", time.Since(held).Seconds(), cp.ID))
	return g
}

func (s *Session) startSigns() {
	s.mu.Lock()
	s.first = time.Now()
	s.mu.Unlock()
	for _, cp := range s.Plan.Checkpoints {
		if cp.Step < 0 {
			time.AfterFunc(time.Duration(cp.After*float64(time.Second)), func() { s.open(cp.ID) })
		}
	}
}

// checkpointBefore is the checkpoint that holds before step (0: the end);
// the end's diagnosis holds only when no diagnosis was given yet.
func (s *Session) checkpointBefore(step int) (Checkpoint, bool) {
	for _, cp := range s.Plan.Checkpoints {
		if cp.Step != step {
			continue
		}
		if step == 0 && s.diagnosed() {
			s.open(cp.ID)
			return cp, false
		}
		return cp, true
	}
	return Checkpoint{}, false
}

// await opens cp and waits for its answer, s.Hold at most; false when
// ctx ended first.
func (s *Session) await(ctx context.Context, cp Checkpoint) bool {
	s.open(cp.ID)
	deadline := time.NewTimer(s.Hold)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		answered, changed := s.answeredLocked(cp.ID), s.changed
		s.mu.Unlock()
		if answered {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return true
		case <-changed:
		}
	}
}

func (s *Session) open(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.opened[id]; !ok {
		s.opened[id] = time.Now()
		s.changedLocked()
	}
}

func (s *Session) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Session) answeredLocked(id string) bool {
	return slices.ContainsFunc(s.answers, func(a Answer) bool { return a.Checkpoint == id })
}

func (s *Session) diagnosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.answers, func(a Answer) bool { return a.Cause != "" })
}
