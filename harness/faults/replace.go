package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Replacer is a target that can be replaced by a fresh instance of itself:
// same identity (server id, name, address) and settings, empty data.
type Replacer interface {
	Replace(ctx context.Context) error
}

// Gater is a target that can say whether it passes a named health gate
// now (GateShallow, GateDeep): one probe, nil when it passes, else why not.
type Gater interface {
	GateCheck(ctx context.Context, gate string) error
}

// EventRecorder is a target that can put an event on the variant's
// timeline (lab.Env.Event).
type EventRecorder interface {
	Event(kind, source, detail string)
}

// SelfGated is a fault step that waits for a health gate of its own (a
// maintenance procedure's): the runner then does not wait for a healthy
// cluster around it, which would be a deep gate the procedure does not
// have, and only records the health it finds.
type SelfGated interface {
	SelfGated() bool
}

// Gates a replacement can wait for, and what the operator does when the
// gate does not pass in time.
const (
	GateNone    = "none"
	GateShallow = "shallow" // the process is up and answers ruok with imok
	GateDeep    = "deep"    // the member follows or observes, caught up, counted synced by the leader

	OnTimeoutProceed = "proceed"
	OnTimeoutStop    = "stop"
)

// gatePoll is the period of a gate's probes.
const gatePoll = 250 * time.Millisecond

func init() {
	Register(func() Fault {
		return &Replace{StartTimeout: Duration(120 * time.Second), Gate: GateNone,
			GateTimeout: Duration(60 * time.Second), OnTimeout: OnTimeoutProceed}
	})
}

// Replace stops the target, removes its data and starts a fresh one in its
// place (same id and address, empty data) that must catch up from its
// peers: one step of a rolling replacement (IL-0277). Then, with a gate,
// it waits as the operator would for the member to pass a health check
// (shallow: the process answers; deep: it is synced with the leader) and
// records the gate's result and how long it took on the timeline; a gate
// that does not pass within gate_timeout either lets the procedure go on
// (proceed, as in the incident) or stops it (stop: the later fault steps
// are not injected). The fault window lasts at least the duration.
type Replace struct {
	// StartTimeout bounds the replacement (until the new server is
	// started; a container member: until it serves).
	StartTimeout Duration `yaml:"start_timeout"`
	// Gate is the health check after the replacement: none, shallow (the
	// process is up and answers ruok with imok) or deep (it reports
	// follower or observer, its zxid caught up with the leader's, and the
	// leader counts it among its synced followers or observers).
	Gate string `yaml:"gate"`
	// GateTimeout bounds the wait for the gate.
	GateTimeout Duration `yaml:"gate_timeout"`
	// OnTimeout is what the operator does when the gate does not pass in
	// time: proceed with the next steps, or stop the procedure.
	OnTimeout string `yaml:"on_timeout"`
}

// Check bounds the waits and names the gates.
func (f *Replace) Check() []lab.Problem {
	var ps lab.Checks
	ps.Msg("start_timeout", lab.CheckDuration(f.StartTimeout, time.Second, "the least a server takes to start"))
	ps.Need(slices.Contains([]string{GateNone, GateShallow, GateDeep}, f.Gate), "gate", "want none, shallow or deep, got %q", f.Gate)
	if f.Gate != GateNone {
		ps.Msg("gate_timeout", lab.CheckDuration(f.GateTimeout, time.Second, "a gate is probed every 250ms"))
	}
	ps.Need(slices.Contains([]string{OnTimeoutProceed, OnTimeoutStop}, f.OnTimeout), "on_timeout", "want proceed or stop, got %q", f.OnTimeout)
	return ps
}

func (*Replace) Name() string { return "replace" }

// SelfGated: a replacement with a gate is a step of a procedure, which
// goes on when its own gate says so.
func (r *Replace) SelfGated() bool { return r.Gate != GateNone }

func (r *Replace) Available(t Target) error {
	if t == nil {
		return errors.New("replace: no target")
	}
	if _, ok := t.(Replacer); !ok {
		return fmt.Errorf("replace: %s cannot be replaced by a fresh instance (the servers of every system can; a workload group cannot)", t.Name())
	}
	if _, ok := t.(Gater); !ok && r.Gate != GateNone {
		return fmt.Errorf("replace: %s has no %s gate", t.Name(), r.Gate)
	}
	return nil
}

func (r *Replace) Inject(ctx context.Context, t Target, d time.Duration) error {
	if err := r.Available(t); err != nil {
		return err
	}
	began := time.Now()
	old := procDesc(t)
	// Once the old member is gone the new one must come up, interrupted or not.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.StartTimeout.D())
	defer cancel()
	if err := t.(Replacer).Replace(rctx); err != nil {
		return fmt.Errorf("replace %s: %w", t.Name(), err)
	}
	proveReplaced(ctx, t, old)
	Record(t, "replace", fmt.Sprintf("%s replaced with an empty data dir, started in %.1fs", t.Name(), time.Since(began).Seconds()))
	if err := r.gate(ctx, t); err != nil {
		return err
	}
	if rest := d - time.Since(began); rest > 0 {
		Sleep(ctx, rest)
	}
	return nil
}

// gate waits for the target to pass the gate and records the outcome;
// a timeout with on_timeout stop is lab.ErrStopTimeline.
func (r *Replace) gate(ctx context.Context, t Target) error {
	if r.Gate == GateNone {
		return nil
	}
	res := WaitGate(ctx, t.(Gater), r.Gate, r.GateTimeout.D())
	switch {
	case res.Passed:
		Record(t, "gate", fmt.Sprintf("%s gate passed by %s after %.1fs", r.Gate, t.Name(), res.Took.Seconds()))
		return nil
	case ctx.Err() != nil:
		Record(t, "gate", fmt.Sprintf("%s gate of %s not finished, the run was interrupted after %.1fs", r.Gate, t.Name(), res.Took.Seconds()))
		return nil
	case r.OnTimeout == OnTimeoutStop:
		Record(t, "gate", fmt.Sprintf("%s gate NOT passed by %s within %s (%v): the procedure stops", r.Gate, t.Name(), r.GateTimeout, res.Last))
		return fmt.Errorf("%s gate of %s: not passed within %s: %w", r.Gate, t.Name(), r.GateTimeout, lab.ErrStopTimeline)
	}
	Record(t, "gate", fmt.Sprintf("%s gate NOT passed by %s within %s (%v): the procedure proceeds", r.Gate, t.Name(), r.GateTimeout, res.Last))
	return nil
}

// GateResult is what a wait for a gate found.
type GateResult struct {
	Passed bool
	// Took is the wait until it passed, or until it gave up.
	Took time.Duration
	// Last is the last probe's reason when it did not pass.
	Last error
}

// WaitGate probes the gate every 250ms until it passes, timeout elapses or
// ctx ends.
func WaitGate(ctx context.Context, g Gater, gate string, timeout time.Duration) GateResult {
	began := time.Now()
	gctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(gctx, 2*time.Second)
		last = g.GateCheck(pctx, gate)
		pcancel()
		if last == nil {
			return GateResult{Passed: true, Took: time.Since(began)}
		}
		select {
		case <-gctx.Done():
			return GateResult{Took: time.Since(began), Last: last}
		case <-time.After(gatePoll):
		}
	}
}

// Record puts an event on the timeline when the target can.
func Record(t Target, kind, detail string) {
	if r, ok := t.(EventRecorder); ok {
		r.Event(kind, t.Name(), detail)
	}
}

// ProcReader is a target that says which process it runs now (a server
// of any placement).
type ProcReader interface {
	Proc() lab.Proc
}

func procDesc(t Target) string {
	if r, ok := t.(ProcReader); ok && r.Proc() != nil {
		p := r.Proc()
		if d := p.Desc(); !strings.HasPrefix(d, "pid ") && p.Pid() > 0 {
			return fmt.Sprintf("%s (host pid %d)", d, p.Pid()) // a container keeps its name
		}
		return p.Desc()
	}
	return ""
}

// proveReplaced: a new process (or container) runs in the old one's place.
func proveReplaced(ctx context.Context, t Target, old string) {
	now := procDesc(t)
	switch {
	case old == "" || now == "":
		Unverified(ctx, t, "%s's process cannot be read back", t.Name())
	case now == old:
		Missed(ctx, t, "the same process (%s) runs after the replacement", now)
	default:
		Landed(ctx, t, "%s runs in place of %s, with empty data", now, old)
	}
}
