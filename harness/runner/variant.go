package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
)

// variant is one variant's run through the pipeline.
type variant struct {
	p         *plan
	name      string
	vr        *reports.VariantResult
	o         Options
	index, of int
	seed      uint64
	dir       string
	runID     string
	log       *slog.Logger

	env     *lab.Env
	version string
	tl      lab.Timeline
	phase   phase
	sched   schedule
	health  health

	mu     sync.Mutex
	events []lab.Event
	// work and smp, once started, for the progress display.
	work lab.Workload
	smp  *sampler
}

// record keeps an event of the variant's timeline.
func (v *variant) record(e lab.Event) {
	v.mu.Lock()
	v.events = append(v.events, e)
	v.mu.Unlock()
	v.journalEvent(e)
	if v.o.OnEvent != nil {
		v.o.OnEvent(v.name, e)
	}
}

// run executes the pipeline. Every process, cgroup, container and network
// it started is gone when it returns, whatever happened, a panic
// included (recovered by the caller once the cleanup ran).
func (v *variant) run(ctx context.Context) (err error) {
	logDir := filepath.Join(v.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	t0 := time.Now()
	v.sched.update(func(s *schedule) { s.t0 = t0 })
	v.vr.StartedAt = t0
	v.enter("servers up")
	site, err := v.p.plc.Open(ctx, v.runID, v.dir, v.log)
	if err != nil {
		return err
	}
	var data []string
	defer func() {
		err = errors.Join(err, site.Close())
		v.tidy(data)
		t := &v.vr.Timing
		t.WallS = time.Since(t0).Seconds()
		t.TeardownS = max(0, t.WallS-t.SetupS-t.TimelineS)
		t.PlannedS = v.p.s.RunLengthFor(v.name).Seconds()
	}()
	v.env = &lab.Env{RunID: v.runID, Dir: v.dir, LogDir: logDir, Seed: v.seed, T0: t0, Site: site, Log: v.log, OnEvent: v.record}
	v.journalSite(site)
	if note := site.Note(); note != "" {
		v.env.Event("note", "placement", note)
	}
	cluster, err := v.p.sys.Start(ctx, v.env, v.p.topos[v.name])
	if err != nil {
		return err
	}
	if dh, ok := cluster.(lab.DataHolder); ok {
		data = dh.DataDirs()
	}
	defer func() { err = errors.Join(err, cluster.Close()) }()
	v.env.Event("health", v.p.sys.Name(), fmt.Sprintf("%d members serving, one leader (%s placement)", len(cluster.Members()), v.p.plc.Name()))
	v.version = cluster.Version(ctx)
	err = v.workload(ctx, cluster)
	v.vr.Unenforced = site.Unenforced()
	v.enter("teardown")
	return err
}

// workload seeds, starts the workload, runs the timeline and collects.
// The workload is stopped and the goroutines waited for also when
// something panics.
func (v *variant) workload(ctx context.Context, cluster lab.Cluster) error {
	w, err := v.p.kind.New(v.env, cluster, v.p.works[v.name])
	if err != nil {
		return err
	}
	v.enter("seed")
	if err := w.Seed(ctx); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	smp := &sampler{c: cluster, every: v.p.sys.SampleEvery()}
	var bg sync.WaitGroup
	stopWork := sync.OnceValue(func() error { stop(); return w.Stop(context.WithoutCancel(ctx)) })
	defer func() { _ = stopWork(); bg.Wait() }()
	bg.Go(func() { defer v.p.catch("the servers' sampler"); smp.run(runCtx) })
	bg.Go(func() { defer v.p.catch("the run journal"); v.journalSamples(runCtx, smp) })
	v.mu.Lock()
	v.smp = smp
	v.mu.Unlock()
	v.enter("warm-up")
	if err := w.Start(runCtx); err != nil {
		return errors.Join(err, stopWork())
	}
	workStart := time.Now()
	v.vr.Timing.SetupS = workStart.Sub(v.env.T0).Seconds()
	v.started(w, workStart)
	bg.Go(func() { v.progress(runCtx) })
	ferr := v.timeline(runCtx, cluster, w, workStart)
	v.vr.Timing.TimelineS = time.Since(workStart).Seconds()
	v.sched.update(func(s *schedule) { s.done = time.Now() })
	v.enter("collect")
	serr := stopWork()
	bg.Wait()
	v.collect(w, smp)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(ferr, serr)
}

// started records the workload's start: shown from now on, and the
// variant's end planned.
func (v *variant) started(w lab.Workload, at time.Time) {
	v.mu.Lock()
	v.work = w
	v.mu.Unlock()
	v.sched.update(func(s *schedule) {
		s.work, s.setup = at, at.Sub(s.t0)
		s.first = at.Add(s.length + s.tail)
	})
}

// phase is where a variant is, for a person watching.
type phase struct {
	mu   sync.Mutex
	name string
}

func (p *phase) set(name string) {
	p.mu.Lock()
	p.name = name
	p.mu.Unlock()
}

func (p *phase) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}
