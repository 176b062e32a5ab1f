package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/scenarios"
)

// Steer lets a facilitator and operators steer a variant's timeline while
// it runs (chaoslab gameday). Options.Steer nil: the timeline runs as
// written.
type Steer interface {
	// Wait returns when the timeline may go on to its next step (next
	// names it; "end" is the end of the observation), planned at t:
	// later while the timeline is held or the observation extended,
	// earlier when told to go on now.
	Wait(ctx context.Context, variant string, t time.Time, next string) Go
	// Actions are operator actions to take now, on the running variant.
	Actions() <-chan Action
}

// EmergencyStopper is implemented by a Steer whose facilitator can stop
// everything at once: Stopped is closed then; every fault and action in
// progress ends at once and restores its target (as on an interrupt), no
// later step is taken, and the run ends and is reported.
type EmergencyStopper interface {
	Stopped() <-chan struct{}
}

// Steering is implemented by a Steer that can say, for the progress
// line, why the run's end is not the planned one ("held by carol", "open
// until the facilitator ends it"); "" when it is.
type Steering interface {
	Steering() string
}

// faultCtx is ctx, ended early by an emergency stop; stopped says
// whether that is what ended it.
func (v *variant) faultCtx(ctx context.Context) (fctx context.Context, stopped func() bool, cancel context.CancelFunc) {
	fctx, cancel = context.WithCancel(ctx)
	es, ok := v.o.Steer.(EmergencyStopper)
	if !ok {
		return fctx, func() bool { return false }, cancel
	}
	var hit bool
	var mu sync.Mutex
	go func() {
		select {
		case <-es.Stopped():
			mu.Lock()
			hit = true
			mu.Unlock()
			cancel()
		case <-fctx.Done():
		}
	}()
	return fctx, func() bool { mu.Lock(); defer mu.Unlock(); return hit }, cancel
}

// Go is what Wait decided.
type Go struct {
	// OK is false when ctx ended first.
	OK bool
	// End: the facilitator ended the run; no further step is taken.
	End bool
	// Notes are what the controls did, recorded on the timeline at the
	// time Noted gives for each (missing or zero: when Wait returned).
	Notes []string
	Noted []time.Time
}

// Note adds a note that happened now.
func (g *Go) Note(text string) {
	g.Notes = append(g.Notes, text)
	g.Noted = append(g.Noted, time.Now())
}

// Action is an operator's action: a registered fault taken now, with its
// target, duration and parameters, and who asked for it; or, with Note
// set, a participant's note for the timeline (no fault).
type Action struct {
	Step   scenarios.FaultStep
	Author string
	Note   string
}

// steered waits for the next step as s allows (as written without s) and
// records what the controls did.
func (v *variant) steered(ctx context.Context, t time.Time, next string) Go {
	if v.o.Steer == nil {
		return Go{OK: sleepUntil(ctx, t)}
	}
	g := v.o.Steer.Wait(ctx, v.name, t, next)
	for i, n := range g.Notes {
		if i < len(g.Noted) && !g.Noted[i].IsZero() {
			v.env.EventAt(g.Noted[i], "control", "facilitator", n)
			continue
		}
		v.env.Event("control", "facilitator", n)
	}
	return g
}

// actions takes the operators' actions as they come, each in its own
// goroutine, until ctx ends; wait returns their fault windows once every
// action has ended.
func (v *variant) actions(ctx context.Context, c lab.Cluster, w lab.Workload) (wait func() []lab.FaultWindow) {
	if v.o.Steer == nil {
		return func() []lab.FaultWindow { return nil }
	}
	var (
		mu  sync.Mutex
		fws []lab.FaultWindow
		wg  sync.WaitGroup
	)
	actx, stop := context.WithCancel(ctx)
	wg.Go(func() {
		n := 0
		for {
			select {
			case <-actx.Done():
				return
			case a := <-v.o.Steer.Actions():
				if a.Note != "" {
					v.env.Event("note", a.Author, a.Note)
					continue
				}
				n++
				wg.Go(func() {
					if fw, ok := v.act(ctx, n, a, c, w); ok {
						mu.Lock()
						fws = append(fws, fw)
						mu.Unlock()
					}
				})
			}
		}
	})
	return func() []lab.FaultWindow {
		stop()
		wg.Wait()
		return fws
	}
}

// act takes one operator action: no health check before it (an operator
// acts during the outage), its window and author on the timeline.
func (v *variant) act(ctx context.Context, n int, a Action, c lab.Cluster, w lab.Workload) (lab.FaultWindow, bool) {
	step := a.Step
	fail := func(err error) (lab.FaultWindow, bool) {
		v.env.Event("action-refused", step.Target, fmt.Sprintf("%s by %s: %v", step.Fault, a.Author, err))
		return lab.FaultWindow{}, false
	}
	f, sel, err := v.faultFor(step)
	if err != nil {
		return fail(err)
	}
	targets, err := v.targetsFor(ctx, sel, c, w, uint64(10000+n))
	if err == nil {
		err = available(f, targets)
	}
	if err != nil {
		return fail(err)
	}
	params := step.ParamsMap()
	if params == nil {
		params = map[string]any{}
	}
	params["author"] = a.Author
	fw := lab.FaultWindow{Fault: step.Fault, Target: step.Target, Member: names(targets), Start: v.env.Now(), Params: params, Detail: record.ActionPrefix + a.Author}
	v.env.Event("action", fw.Member, fmt.Sprintf("%s %s (%s) for %s, by %s", step.Fault, fw.Member, step.Target, step.Duration, a.Author))
	v.journalFault(fw, true)
	fctx, stopped, cancel := v.faultCtx(ctx)
	defer cancel()
	pctx, proofs := faults.WithProofs(fctx, v.env.Now)
	ierr := injectAll(pctx, v.p.aborter, f, targets, step.Duration.D())
	fw.End = v.env.Now()
	fw.Proofs = v.proved(fw.Fault, proofs)
	switch {
	case stopped():
		fw.Detail += ": " + record.EmergencyStopDetail
	case ierr != nil && ctx.Err() == nil:
		fw.Detail += ": " + ierr.Error()
	}
	v.journalFault(fw, false)
	v.env.Event("action-end", fw.Member, step.Fault+" ended (action by "+a.Author+")")
	return fw, true
}
