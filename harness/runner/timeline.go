package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/record"
	"github.com/chaoslab/chaoslab/scenarios"
)

// health is what the checks around the faults found.
type health struct {
	failures int
	// afterLast is the seconds from the end of the last fault until the
	// cluster was healthy (+Inf when not within the deadline).
	afterLast float64
}

// Deadlines of the health checks around a fault.
const (
	healthBefore = 20 * time.Second
	healthAfter  = 30 * time.Second
	// healthGlance is the check after a step with its own gate
	// (faults.SelfGated): what the cluster looks like, not a wait. It
	// takes about 2 s to pass on servers at a tenth of a core (three
	// polls that agree on the leader); one that does not pass holds the
	// procedure that long.
	healthGlance = 3 * time.Second
)

// limitSettle is how long the workload runs against servers held to their
// limits before the first fault, at least: the steady traffic the metrics
// take as the baseline (the lowest rate over any 5 s) is the limited one.
const limitSettle = 10 * time.Second

// steadyGrace is the least time the workload gets past the warm-up to
// reach its steady state: a first load on a loaded machine (eight Python
// TreeCaches walking 6,000 znodes each on 2 cores) can take more than a
// short warm-up's double. Waiting costs nothing when the workload is
// steady; a workload that is not by then makes the run inconclusive.
const steadyGrace = 60 * time.Second

// timeline runs the warm-up, counted from workStart (the workload's start,
// after the servers' start and the seeding), injects each fault with a
// health check before and after, and observes until the end.
func (v *variant) timeline(ctx context.Context, c lab.Cluster, w lab.Workload, workStart time.Time) error {
	steps, err := v.p.s.FaultsFor(v.name)
	if err != nil {
		return err
	}
	if ok, err := v.warmup(ctx, c, w, workStart); !ok {
		return err
	}
	warm := v.p.s.Timeline.Warmup.D()
	warmEnd := time.Now()
	v.tl.WarmEnd = v.env.Clock(warmEnd)
	runEnd := warmEnd.Add(v.p.s.RunLengthFor(v.name) - warm)
	v.tl.End = v.env.Clock(runEnd)
	v.sched.update(func(s *schedule) { s.end = runEnd })
	var errs []error
	acted := v.actions(ctx, c, w)
	defer func() { v.vr.Faults = append(v.vr.Faults, acted()...) }()
	for i, step := range steps {
		if step.At.D() > 0 {
			v.enter(fmt.Sprintf("steady, fault %d/%d at +%s", i+1, len(steps), step.At))
		}
		g := v.steered(ctx, warmEnd.Add(step.At.D()), step.Fault)
		if !g.OK {
			return nil
		}
		if g.End {
			v.env.Event("procedure-stopped", "facilitator", fmt.Sprintf("run ended by the facilitator; %d fault step(s) not injected", len(steps)-i))
			break
		}
		if err := v.inject(ctx, i, step, c, w); err != nil {
			if errors.Is(err, lab.ErrStopTimeline) {
				v.env.Event("procedure-stopped", step.Target, fmt.Sprintf("%v; %d later fault step(s) not injected", err, len(steps)-i-1))
				break
			}
			errs = append(errs, err)
		}
	}
	if ctx.Err() == nil {
		v.enter("observe")
		runEnd = v.observeWhole(runEnd)
	}
	if g := v.steered(ctx, runEnd, "end"); g.OK && v.o.Steer != nil {
		v.tl.End = v.env.Now()
	}
	return errors.Join(errs...)
}

// observeWhole keeps the scenario's whole observation after faults that
// ended later than planned (a replacement waiting on its gate, a slow
// restart): the end moves by the overrun, and the metrics count what
// happened after the late fault as they would after a timely one.
func (v *variant) observeWhole(runEnd time.Time) time.Time {
	minEnd := time.Now().Add(v.p.s.Timeline.Observe.D())
	if !minEnd.After(runEnd) {
		return runEnd
	}
	late := minEnd.Sub(runEnd).Round(100 * time.Millisecond)
	v.env.Event("observe", "timeline", fmt.Sprintf("the faults ended %s later than planned; the observation ends %s later too", late, late))
	v.tl.End = v.env.Clock(minEnd)
	v.sched.update(func(s *schedule) { s.end = minEnd })
	return minEnd
}

// warmup lets the workload reach its steady state (every client has its
// tree, every server routes) against servers at full speed, up to the
// warm-up and as long again, or steadyGrace if longer; then holds the
// servers to their limits (CPU share) and runs until the warm-up's end,
// and at least limitSettle more. A first
// load is the workload's, not the incident's: on servers at a third of a
// core it took most of a warm-up. It returns false when interrupted or
// when the limits could not be set (the error).
func (v *variant) warmup(ctx context.Context, c lab.Cluster, w lab.Workload, workStart time.Time) (bool, error) {
	warm := v.p.s.Timeline.Warmup.D()
	if !v.waitSteady(ctx, w, workStart.Add(warm+max(warm, steadyGrace))) {
		return false, nil
	}
	if err := c.Limit(ctx); err != nil {
		return false, fmt.Errorf("hold the servers to their limits: %w", err)
	}
	return sleepUntil(ctx, later(workStart.Add(warm), time.Now().Add(limitSettle))), nil
}

// waitSteady waits until every instance of the workload is steady, or the
// deadline; it returns false when the run was interrupted.
func (v *variant) waitSteady(ctx context.Context, w lab.Workload, deadline time.Time) bool {
	for {
		st := w.Steady()
		if st.Ready == st.Total {
			v.env.Event("steady", "workload", fmt.Sprintf("all %d %s after %.1fs of warm-up", st.Total, st.What, v.env.Now()))
			v.vr.Steady = &record.SteadyState{Ready: st.Ready, Total: st.Total, What: st.What}
			return true
		}
		if time.Now().After(deadline) {
			v.env.Event("steady", "workload", fmt.Sprintf("warm-up ended with %d of %d %s", st.Ready, st.Total, st.What))
			v.vr.Steady = &record.SteadyState{Ready: st.Ready, Total: st.Total, What: st.What}
			return true
		}
		if !sleepUntil(ctx, time.Now().Add(250*time.Millisecond)) {
			return false
		}
	}
}

// inject runs one fault step: its targets resolved now, the cluster's
// health checked before and after. A cluster that is not healthy, or a
// target that does not exist now, is a finding recorded on the timeline;
// only a fault that could not be built, injected or undone is the lab's
// failure.
func (v *variant) inject(ctx context.Context, i int, step scenarios.FaultStep, c lab.Cluster, w lab.Workload) error {
	f, sel, err := v.faultFor(step)
	if err != nil {
		return err
	}
	before, after := healthBefore, healthAfter
	if g, ok := f.(faults.SelfGated); ok && g.SelfGated() {
		// The first step's check is the steady state's, before any
		// fault: a wait, not a glance. Before a later step the glance
		// after the one before it has just looked (twice would hold the
		// procedure twice).
		if i > 0 {
			before = 0
		}
		after = healthGlance
	}
	healthy := before == 0 || v.checkHealth(ctx, "before "+step.Fault, c, w, before)
	if st := v.vr.Steady; i == 0 && st != nil && ctx.Err() == nil {
		st.Checked, st.Healthy = true, healthy
	}
	for _, fw := range v.vr.Faults {
		sel.Touched = append(sel.Touched, strings.Split(fw.Member, ",")...)
	}
	targets, err := v.targetsFor(ctx, sel, c, w, uint64(100+i))
	if err != nil {
		v.env.Event("fault-skipped", step.Target, fmt.Sprintf("%s not injected: %v", step.Fault, err))
		return nil
	}
	if err := available(f, targets); err != nil {
		return err
	}
	fw := lab.FaultWindow{Fault: step.Fault, Target: step.Target, Member: names(targets), Start: v.env.Now(), Params: step.ParamsMap()}
	v.enter(fmt.Sprintf("fault %d/%d %s %s (%s) for %s", i+1, len(v.p.s.Timeline.Faults), step.Fault, fw.Member, step.Target, step.Duration))
	v.env.Event("fault", fw.Member, fmt.Sprintf("%s %s (%s) for %s", step.Fault, fw.Member, step.Target, step.Duration))
	v.journalFault(fw, true)
	fctx, stopped, cancel := v.faultCtx(ctx)
	defer cancel()
	pctx, proofs := faults.WithProofs(fctx, v.env.Now)
	ierr := injectAll(pctx, v.p.aborter, f, targets, step.Duration.D())
	fw.End = v.env.Now()
	fw.Proofs = v.proved(fw.Fault, proofs)
	if stopped() {
		ierr, fw.Detail = nil, record.EmergencyStopDetail
		v.env.Event("emergency-stop", fw.Member, step.Fault+" "+record.EmergencyStopDetail)
	}
	if ierr != nil && ctx.Err() == nil {
		fw.Detail = ierr.Error()
	}
	v.vr.Faults = append(v.vr.Faults, fw)
	v.journalFault(fw, false)
	v.env.Event("fault-end", fw.Member, step.Fault+" ended")
	ended := time.Now()
	if ok := v.checkHealth(ctx, "after "+step.Fault, c, w, after); ok {
		v.health.afterLast = time.Since(ended).Seconds()
	} else {
		v.health.afterLast = math.Inf(1)
	}
	if ierr != nil && ctx.Err() == nil {
		return fmt.Errorf("fault %d (%s): %w", i, step.Fault, ierr)
	}
	return nil
}

// proved records a fault's proofs on the timeline: each target it did
// not land on is an event, and makes the variant inconclusive.
func (v *variant) proved(fault string, p *faults.Proofs) []lab.Proof {
	list := p.List()
	for _, pr := range list {
		if pr.Landed == record.Missed {
			v.env.Event("fault-missed", pr.Target, fault+" did not land: "+pr.Observed)
		}
	}
	return list
}

// injectAll injects f into every target at once and waits for all.
// A panic in the fault aborts the run.
func injectAll(ctx context.Context, a *aborter, f interface {
	Name() string
	Inject(context.Context, lab.Target, time.Duration) error
}, targets []lab.Target, d time.Duration) error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			defer func() {
				if x := recover(); x != nil {
					errs[i] = a.panicked("fault "+f.Name()+" on "+t.Name(), x)
				}
			}()
			errs[i] = f.Inject(ctx, t, d)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// checkHealth waits up to d for a healthy cluster and records what it
// found, with the workload's steadiness.
func (v *variant) checkHealth(ctx context.Context, when string, c lab.Cluster, w lab.Workload, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	began := time.Now()
	hctx, cancel := context.WithTimeout(ctx, d)
	err := c.WaitHealthy(hctx)
	leader := "unknown"
	if err == nil {
		if l, lerr := c.Leader(hctx); lerr == nil {
			leader = l.Name()
		}
	}
	cancel()
	st := w.Steady()
	load := fmt.Sprintf("; %d of %d %s", st.Ready, st.Total, st.What)
	switch {
	case ctx.Err() != nil:
		v.env.Event("health", v.p.sys.Name(), when+": not checked, the run was interrupted")
		return false
	case err != nil:
		v.health.failures++
		v.env.Event("health", v.p.sys.Name(), fmt.Sprintf("%s: NOT healthy within %s: %v%s", when, d, err, load))
		return false
	}
	v.env.Event("health", v.p.sys.Name(), fmt.Sprintf("%s: healthy after %.1fs, leader %s%s", when, time.Since(began).Seconds(), leader, load))
	return true
}

func names(ts []lab.Target) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return strings.Join(out, ",")
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// faultFor builds a step's fault and parses its target selector.
func (v *variant) faultFor(step scenarios.FaultStep) (faults.Fault, lab.Selector, error) {
	f, err := step.NewFault()
	if err != nil {
		return nil, lab.Selector{}, err
	}
	sel, err := lab.ParseSelector(step.Target, v.p.sys.Roles(), v.p.kind.Groups())
	return f, sel, err
}

// targetsFor resolves sel now, within the health check's deadline, with
// randomness seeded by seed.
func (v *variant) targetsFor(ctx context.Context, sel lab.Selector, c lab.Cluster, w lab.Workload, seed uint64) ([]lab.Target, error) {
	rctx, cancel := context.WithTimeout(ctx, healthBefore)
	defer cancel()
	return sel.Resolve(rctx, c, w, v.p.kind.Groups(), v.env.Rand(seed))
}

// available says whether f can act on every target.
func available(f faults.Fault, targets []lab.Target) error {
	for _, t := range targets {
		if err := f.Available(t); err != nil {
			return err
		}
	}
	return nil
}
