package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
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
)

// timeline waits out the warm-up, counted from workStart (the workload's
// start, after the servers' start and the seeding), until the workload is
// steady (up to as long again), injects each fault with a health check
// before and after, and observes until the end.
func (v *variant) timeline(ctx context.Context, c lab.Cluster, w lab.Workload, workStart time.Time) error {
	tl := v.p.s.Timeline
	warm := tl.Warmup.D()
	if !sleepUntil(ctx, workStart.Add(warm)) {
		return nil
	}
	if !v.waitSteady(ctx, w, workStart.Add(2*warm)) {
		return nil
	}
	warmEnd := time.Now()
	v.tl.WarmEnd = v.env.Clock(warmEnd)
	runEnd := warmEnd.Add(v.p.s.RunLength() - warm)
	v.tl.End = v.env.Clock(runEnd)
	var errs []error
	for i, step := range tl.Faults {
		if !sleepUntil(ctx, warmEnd.Add(step.At.D())) {
			return nil
		}
		v.phase.set(fmt.Sprintf("fault %d/%d %s", i+1, len(tl.Faults), step.Fault))
		if err := v.inject(ctx, i, step, c, w); err != nil {
			errs = append(errs, err)
		}
		v.phase.set("observe")
	}
	sleepUntil(ctx, runEnd)
	return errors.Join(errs...)
}

// waitSteady waits until every instance of the workload is steady, or the
// deadline; it returns false when the run was interrupted.
func (v *variant) waitSteady(ctx context.Context, w lab.Workload, deadline time.Time) bool {
	for {
		st := w.Steady()
		if st.Ready == st.Total {
			v.env.Event("steady", "workload", fmt.Sprintf("all %d %s after %.1fs of warm-up", st.Total, st.What, v.env.Now()))
			return true
		}
		if time.Now().After(deadline) {
			v.env.Event("steady", "workload", fmt.Sprintf("warm-up ended with %d of %d %s", st.Ready, st.Total, st.What))
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
	f, err := step.NewFault()
	if err != nil {
		return err
	}
	groups := v.p.kind.Groups()
	sel, err := lab.ParseSelector(step.Target, v.p.sys.Roles(), groups)
	if err != nil {
		return err
	}
	v.checkHealth(ctx, "before "+step.Fault, c, w, healthBefore)
	rctx, cancel := context.WithTimeout(ctx, healthBefore)
	targets, err := sel.Resolve(rctx, c, w, groups, v.env.Rand(uint64(100+i)))
	cancel()
	if err != nil {
		v.env.Event("fault-skipped", step.Target, fmt.Sprintf("%s not injected: %v", step.Fault, err))
		return nil
	}
	for _, t := range targets {
		if err := f.Available(t); err != nil {
			return err
		}
	}
	fw := lab.FaultWindow{Fault: step.Fault, Target: step.Target, Member: names(targets), Start: v.env.Now(), Params: step.ParamsMap()}
	v.env.Event("fault", fw.Member, fmt.Sprintf("%s %s (%s) for %s", step.Fault, fw.Member, step.Target, step.Duration))
	ierr := injectAll(ctx, f, targets, step.Duration.D())
	fw.End = v.env.Now()
	if ierr != nil && ctx.Err() == nil {
		fw.Detail = ierr.Error()
	}
	v.vr.Faults = append(v.vr.Faults, fw)
	v.env.Event("fault-end", fw.Member, step.Fault+" ended")
	ended := time.Now()
	if ok := v.checkHealth(ctx, "after "+step.Fault, c, w, healthAfter); ok {
		v.health.afterLast = time.Since(ended).Seconds()
	} else {
		v.health.afterLast = math.Inf(1)
	}
	if ierr != nil && ctx.Err() == nil {
		return fmt.Errorf("fault %d (%s): %w", i, step.Fault, ierr)
	}
	return nil
}

// injectAll injects f into every target at once and waits for all.
func injectAll(ctx context.Context, f interface {
	Inject(context.Context, lab.Target, time.Duration) error
}, targets []lab.Target, d time.Duration) error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { errs[i] = f.Inject(ctx, t, d) })
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
