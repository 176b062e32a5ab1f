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
	health  health

	mu     sync.Mutex
	events []lab.Event
}

// record keeps an event of the variant's timeline.
func (v *variant) record(e lab.Event) {
	v.mu.Lock()
	v.events = append(v.events, e)
	v.mu.Unlock()
	if v.o.OnEvent != nil {
		v.o.OnEvent(v.name, e)
	}
}

// run executes the pipeline. Every process, cgroup, container and network
// it started is gone when it returns, whatever happened.
func (v *variant) run(ctx context.Context) (err error) {
	logDir := filepath.Join(v.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	v.phase.set("setup")
	t0 := time.Now()
	v.vr.StartedAt = t0
	site, err := v.p.plc.Open(ctx, v.runID, v.dir, v.log)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, site.Close())
		t := &v.vr.Timing
		t.WallS = time.Since(t0).Seconds()
		t.TeardownS = max(0, t.WallS-t.SetupS-t.TimelineS)
		t.PlannedS = v.p.s.RunLength().Seconds()
	}()
	v.env = &lab.Env{RunID: v.runID, Dir: v.dir, LogDir: logDir, Seed: v.seed, T0: t0, Site: site, Log: v.log, OnEvent: v.record}
	if note := site.Note(); note != "" {
		v.env.Event("note", "placement", note)
	}
	cluster, err := v.p.sys.Start(ctx, v.env, v.p.topos[v.name])
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cluster.Close()) }()
	v.env.Event("health", v.p.sys.Name(), fmt.Sprintf("%d members serving, one leader (%s placement)", len(cluster.Members()), v.p.plc.Name()))
	v.version = cluster.Version(ctx)
	return v.workload(ctx, cluster)
}

// workload seeds, starts the workload, runs the timeline and collects.
func (v *variant) workload(ctx context.Context, cluster lab.Cluster) error {
	w, err := v.p.kind.New(v.env, cluster, v.p.works[v.name])
	if err != nil {
		return err
	}
	v.phase.set("seed")
	if err := w.Seed(ctx); err != nil {
		return err
	}
	if err := cluster.Limit(ctx); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	smp := &sampler{c: cluster, every: v.p.sys.SampleEvery()}
	var bg sync.WaitGroup
	bg.Go(func() { smp.run(runCtx) })
	v.phase.set("warm-up")
	if err := w.Start(runCtx); err != nil {
		stop()
		bg.Wait()
		return errors.Join(err, w.Stop(ctx))
	}
	workStart := time.Now()
	v.vr.Timing.SetupS = workStart.Sub(v.env.T0).Seconds()
	bg.Go(func() { v.progress(runCtx, w, smp) })
	ferr := v.timeline(runCtx, cluster, w, workStart)
	v.vr.Timing.TimelineS = time.Since(workStart).Seconds()
	v.phase.set("collect")
	stop()
	serr := w.Stop(context.WithoutCancel(ctx))
	bg.Wait()
	v.collect(w, smp)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(ferr, serr)
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
