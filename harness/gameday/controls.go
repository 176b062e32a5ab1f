package gameday

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/runner"
)

// Controls are the facilitator's hold, next, extend and end, and the
// operators' queue of actions: a runner.Steer.
type Controls struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every change
	held    bool
	heldBy  string
	endedBy string
	nexts   int // how many times "next step now" was asked
	extend  time.Duration
	ended   bool
	// stop is closed by an emergency stop (runner.EmergencyStopper).
	stop    chan struct{}
	stopped bool
	actions chan runner.Action
	// onChange tells the dashboards (nil: nobody).
	onChange func(detail string)
	// openEnded, when above 0, keeps the observation going after the
	// timeline until the facilitator ends it, for at most this long.
	openEnded time.Duration
	// open is set once a variant's timeline has played and the
	// observation waits for the facilitator's end.
	open bool
}

// Steering implements runner.Steering: held, or open until the
// facilitator ends the run.
func (c *Controls) Steering() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.held:
		return "held by " + c.heldBy
	case c.open && !c.ended:
		return fmt.Sprintf("open until the facilitator ends it, at most %s after the plan", c.openEnded)
	}
	return ""
}

// UntilEnded keeps each variant's observation going after its timeline
// until the facilitator ends it (or max has passed since the planned
// end): a game day as long as the facilitator wants.
func (c *Controls) UntilEnded(max time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openEnded = max
}

// NewControls returns controls that let the timeline run as written.
func NewControls(onChange func(detail string)) *Controls {
	return &Controls{changed: make(chan struct{}), stop: make(chan struct{}), actions: make(chan runner.Action, 16), onChange: onChange}
}

// State is what the controls say now.
type State struct {
	Held     bool    `json:"held"`
	HeldBy   string  `json:"held_by,omitempty"`
	Extended float64 `json:"extended_s"`
	Ended    bool    `json:"ended"`
	// Stopped: the facilitator's emergency stop ended every fault.
	Stopped bool `json:"stopped,omitempty"`
}

// State returns the controls' state.
func (c *Controls) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{Held: c.held, HeldBy: c.heldBy, Extended: c.extend.Seconds(), Ended: c.ended, Stopped: c.stopped}
}

// Stopped implements runner.EmergencyStopper: closed by "stop".
func (c *Controls) Stopped() <-chan struct{} { return c.stop }

// Do applies one control: hold, release, next, extend (by d), end, or
// stop (the emergency stop: every fault and action in progress ends and
// restores its target, and the run ends).
func (c *Controls) Do(op string, d time.Duration, author string) error {
	c.mu.Lock()
	switch op {
	case "hold":
		c.held, c.heldBy = true, author
	case "release":
		c.held = false
	case "next":
		c.held = false
		c.nexts++
	case "extend":
		if d <= 0 || d > time.Hour {
			c.mu.Unlock()
			return fmt.Errorf("extend: %s is not between 0 and 1h", d)
		}
		c.extend += d
	case "end":
		c.held, c.ended, c.endedBy = false, true, author
	case "stop":
		c.held, c.ended, c.endedBy = false, true, author
		if !c.stopped {
			c.stopped = true
			close(c.stop)
		}
	default:
		c.mu.Unlock()
		return fmt.Errorf("no control %q (have hold, release, next, extend, end, stop)", op)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if c.onChange != nil {
		detail := op + " by " + author
		if op == "extend" {
			detail = fmt.Sprintf("extend by %s, by %s", d, author)
		}
		c.onChange(detail)
	}
	return nil
}

// Act queues an operator's action; it fails when the queue is full.
func (c *Controls) Act(a runner.Action) error {
	select {
	case c.actions <- a:
		return nil
	default:
		return fmt.Errorf("act: %d actions already waiting", cap(c.actions))
	}
}

// Actions implements runner.Steer.
func (c *Controls) Actions() <-chan runner.Action { return c.actions }

// Wait implements runner.Steer: it returns at t (plus the extension when
// next is the end), at once on "next" or "end", and not while held.
func (c *Controls) Wait(ctx context.Context, variant string, t time.Time, next string) runner.Go {
	c.mu.Lock()
	nexts, open := c.nexts, c.openEnded
	c.mu.Unlock()
	var heldSince time.Time
	g := runner.Go{}
	if next == "end" && open > 0 {
		g.Note(fmt.Sprintf("the timeline has played; the run goes on until the facilitator ends it (at most %s more)", open))
		c.mu.Lock()
		c.open = true
		c.mu.Unlock()
	}
	for {
		c.mu.Lock()
		held, ended, changed, extend := c.held, c.ended, c.changed, c.extend
		hurried := c.nexts > nexts
		heldBy, endedBy := c.heldBy, c.endedBy
		c.mu.Unlock()
		if held && heldSince.IsZero() {
			heldSince = time.Now()
			g.Note(fmt.Sprintf("timeline held before %s by %s", next, heldBy))
		}
		if !held && !heldSince.IsZero() {
			g.Note(fmt.Sprintf("timeline released after %.1fs", time.Since(heldSince).Seconds()))
			heldSince = time.Time{}
		}
		due := t
		if next == "end" {
			due = t.Add(extend + open)
		}
		switch {
		case ended:
			g.OK, g.End = true, true
			g.Note("run ended by " + endedBy + " before " + next)
			return g
		case hurried:
			g.OK = true
			g.Note(fmt.Sprintf("%s taken now by the facilitator, %.1fs early", next, time.Until(due).Seconds()))
			return g
		case !held && !time.Now().Before(due):
			if next == "end" && open > 0 {
				g.Note(fmt.Sprintf("ended %s after the timeline: the most a run open to the facilitator lasts", open))
			}
			if next == "end" && extend > 0 {
				g.Note(fmt.Sprintf("observation extended by %s", extend))
			}
			g.OK = true
			return g
		}
		if !waitChange(ctx, changed, held, due) {
			return runner.Go{Notes: g.Notes, Noted: g.Noted}
		}
	}
}

// waitChange waits for a change of the controls, or for due unless held;
// false when ctx ended.
func waitChange(ctx context.Context, changed <-chan struct{}, held bool, due time.Time) bool {
	var wake <-chan time.Time
	if !held {
		t := time.NewTimer(time.Until(due))
		defer t.Stop()
		wake = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-wake:
	}
	return true
}
