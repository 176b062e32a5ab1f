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

	"github.com/go-zookeeper/zk"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/zkmirror"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
)

type variantRun struct {
	s       *scenarios.Scenario
	name    string
	vr      *reports.VariantResult
	seed    int64
	dir     string
	runID   string
	opts    Options
	backend backend
	log     *slog.Logger

	t0        time.Time
	runEnd    time.Time // the end of observation, warm-up extension included
	warmEnd   float64   // when the warm-up ended, on the variant's clock (0: not yet)
	zkVersion string

	mu     sync.Mutex
	events []reports.Event
}

func (v *variantRun) clock(t time.Time) float64 { return t.Sub(v.t0).Seconds() }

func (v *variantRun) event(kind, source, detail string) {
	e := reports.Event{T: v.clock(time.Now()), Kind: kind, Source: source, Detail: detail}
	v.mu.Lock()
	v.events = append(v.events, e)
	v.mu.Unlock()
	v.log.Info(kind, "source", source, "detail", detail, "t", fmt.Sprintf("%.1fs", e.T))
	if v.opts.OnEvent != nil {
		v.opts.OnEvent(v.name, e)
	}
}

// run executes the variant. Every process, cgroup and server it started is
// gone when it returns, whatever happened.
func (v *variantRun) run(ctx context.Context) (err error) {
	if isFleet(v.s) {
		return v.runFleet(ctx)
	}
	logDir := filepath.Join(v.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	w := v.vr.Workload
	topo := v.s.Topology.ZooKeeper
	v.t0 = time.Now()
	v.vr.StartedAt = v.t0

	mgr, err := limits.NewManager(v.runID, v.log)
	if err != nil {
		return fmt.Errorf("create cgroups: %w", err)
	}
	defer func() { err = errors.Join(err, mgr.Close()) }()
	if mgr.Mode() == limits.ModeNone {
		v.event("note", "limits", "no cgroup can be used here ("+mgr.Reason()+"): memory and CPU limits are NOT enforced; memory growth is still measured")
	}

	// Servers.
	ens, err := v.backend.StartZooKeeper(ctx, clusterSpec{Topo: topo, Dir: v.dir, RunID: v.runID, Limits: mgr, Logger: v.log})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, ens.Close()) }()
	v.event("health", "ensemble", fmt.Sprintf("all members serving, one leader (%s backend)", v.backend.Name()))
	if ver, err := ens.Members()[0].Version(ctx); err == nil {
		v.zkVersion = ver
	}

	// Seed the tree and start the writer on a connection of the harness.
	conn, _, err := zk.Connect(ens.Servers(), 30*time.Second, zk.WithLogger(quietLogger{v.log}))
	if err != nil {
		return fmt.Errorf("connect harness client: %w", err)
	}
	defer conn.Close()
	tree := zkmirror.Tree{Root: w.Tree.Path, Fanout: w.Tree.Fanout, DataBytes: w.Tree.DataBytes}
	hot := zkmirror.HotSet(tree, w.Writer.Share, uint64(v.seed))
	seedCtx, cancelSeed := context.WithTimeout(ctx, 2*time.Minute)
	err = zkmirror.Seed(seedCtx, conn, tree, hot, v.log)
	cancelSeed()
	if err != nil {
		return err
	}
	v.event("note", "harness", fmt.Sprintf("seeded %d znodes (%d hot) of %d bytes under %s", len(tree.Paths()), len(hot), w.Tree.DataBytes, w.Tree.Path))

	// Hold the servers to their CPU share once they are loaded.
	if topo.CPUQuota > 0 {
		if err := ens.LimitCPU(topo.CPUQuota); err != nil {
			return err
		}
		v.event("note", "harness", fmt.Sprintf("each server held to %.2f cores", topo.CPUQuota))
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	writer := &zkmirror.Writer{Conn: conn, Hot: hot, Rate: w.Writer.RatePerSec, DataBytes: w.Tree.DataBytes}
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); writer.Run(runCtx) }()

	// Servers' figures on the variant's clock.
	sampler := &serverSampler{ens: ens, clock: v.clock, every: 100 * time.Millisecond}
	bg.Add(1)
	go func() { defer bg.Done(); sampler.run(runCtx) }()

	// Clients, spread over the start window.
	launcher, clientServers := clientSetup(v.backend, ens, v.opts, mgr, v.runID, v.log)
	if cl, ok := launcher.(containerLauncher); ok && cl.textMB > 0 && w.MemoryLimitMB > 0 {
		v.vr.ClientLimitMB = w.MemoryLimitMB + cl.textMB
		v.vr.ClientLimitNote = fmt.Sprintf("each client container starts with %d MiB more for its executable's page cache (%d MiB in all); %s after its start the limit is lowered to %d MiB plus the page cache the kernel charged to that container (a local process shares those pages with its parent and is charged for none)%s. Each client's log gives its limit", cl.textMB, v.vr.ClientLimitMB, settle, w.MemoryLimitMB, lockNote(cl.lockText))
	}
	clients := make([]*client, w.Clients)
	var cwg sync.WaitGroup
	r := rng(v.seed)
	for i := range clients {
		clients[i] = &client{
			id: fmt.Sprintf("client-%02d", i+1), w: w, servers: clientServers, hot: len(hot),
			seed: r.Uint64(), launch: launcher,
			logPath: filepath.Join(logDir, fmt.Sprintf("client-%02d.log", i+1)), clock: v.clock, log: v.log,
		}
		clients[i].sum.ID = clients[i].id
		clients[i].sum.Log = "logs/" + filepath.Base(clients[i].logPath)
	}
	spread := w.StartSpread.D()
	workStart := time.Now()
	cwg.Add(len(clients))
	go func() {
		for i, c := range clients {
			if i > 0 && spread > 0 {
				select {
				case <-runCtx.Done():
				case <-time.After(spread / time.Duration(len(clients))):
				}
			}
			go c.run(runCtx, &cwg)
		}
	}()

	progress := newProgress(v, clients, sampler)
	bg.Add(1)
	go func() { defer bg.Done(); progress.run(runCtx) }()

	// The fault timeline.
	steady := func() (int, int) { return freshClients(clients, writer.Log(), w) }
	ferr := v.timeline(runCtx, ens, steady, workStart)

	stopRun()
	cwg.Wait()
	bg.Wait()

	// Gather.
	v.collect(clients, sampler, writer.Log())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return ferr
}

// timeline waits out the warm-up, counted from workStart (the first
// client's start, after the servers' start and the seeding), injects each
// fault with a health check before and after, and observes until the end.
func (v *variantRun) timeline(ctx context.Context, ens zkCluster, steady func() (fresh, total int), workStart time.Time) error {
	tl := v.s.Timeline
	warmEnd := workStart.Add(tl.Warmup.D())
	if !sleepUntil(ctx, warmEnd) {
		return nil
	}
	// The faults hit a steady system: the warm-up lasts until every mirror
	// is loaded and fresh, up to as long again.
	for deadline := warmEnd.Add(tl.Warmup.D()); ; {
		fresh, total := steady()
		if fresh == total {
			v.event("steady", "clients", fmt.Sprintf("all %d mirrors fresh after %.1fs of warm-up", total, v.clock(time.Now())))
			break
		}
		if time.Now().After(deadline) {
			v.event("steady", "clients", fmt.Sprintf("warm-up ended with %d of %d mirrors fresh", fresh, total))
			break
		}
		if !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			return nil
		}
	}
	warmEnd = time.Now()
	v.warmEnd = v.clock(warmEnd)
	v.runEnd = warmEnd.Add(v.s.RunLength() - tl.Warmup.D())
	var errs []error
	var end time.Time
	for i, step := range tl.Faults {
		at := warmEnd.Add(step.At.D())
		if !sleepUntil(ctx, at) {
			return nil
		}
		f, err := faults.Get(step.Fault)
		if err != nil {
			return err
		}
		hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		target, err := pickTarget(hctx, ens, step.Target, rng(v.seed+int64(i)))
		if err == nil {
			err = ens.WaitHealthy(hctx)
		}
		cancel()
		if err != nil {
			v.event("health", "ensemble", "before fault: NOT healthy: "+err.Error())
			errs = append(errs, fmt.Errorf("health before fault %d: %w", i, err))
			if target == nil {
				continue
			}
		} else {
			v.event("health", "ensemble", "before fault: healthy, leader "+leaderName(ctx, ens))
		}
		if err := f.Available(target); err != nil {
			errs = append(errs, err)
			continue
		}
		fw := reports.FaultWindow{Fault: step.Fault, Target: step.Target, Member: target.Name(), Start: v.clock(time.Now())}
		v.event("fault", target.Name(), fmt.Sprintf("%s %s (%s) for %s", step.Fault, target.Name(), step.Target, step.Duration))
		ierr := f.Inject(ctx, target, step.Duration.D())
		fw.End = v.clock(time.Now())
		if ierr != nil {
			fw.Detail = ierr.Error()
			errs = append(errs, ierr)
		}
		v.vr.Faults = append(v.vr.Faults, fw)
		v.event("fault-end", target.Name(), step.Fault+" ended")
		// Restarted members need their limits again.
		ens.AfterFault()
		end = time.Now()
		hctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		herr := ens.WaitHealthy(hctx)
		cancel()
		if ctx.Err() != nil {
			v.event("health", "ensemble", "after fault: not checked, the run was interrupted")
		} else if herr != nil {
			v.event("health", "ensemble", "after fault: NOT healthy within 30s: "+herr.Error())
		} else {
			v.event("health", "ensemble", fmt.Sprintf("after fault: healthy %.1fs after the fault ended, leader %s", time.Since(end).Seconds(), leaderName(ctx, ens)))
		}
	}
	if end.IsZero() {
		end = warmEnd
	}
	sleepUntil(ctx, v.runEnd)
	return errors.Join(errs...)
}

func leaderName(ctx context.Context, ens zkCluster) string {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := ens.Leader(lctx)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return l.Name()
}

// pickTarget resolves a role to a member.
func pickTarget(ctx context.Context, ens zkCluster, role string, r interface{ IntN(int) int }) (faults.Target, error) {
	switch role {
	case "leader":
		l, err := ens.Leader(ctx)
		if err != nil {
			return nil, err
		}
		return l, nil
	case "follower":
		fs, err := ens.Followers(ctx)
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 {
			return nil, errors.New("pick target: no follower")
		}
		return fs[r.IntN(len(fs))], nil
	default:
		ms := ens.Members()
		return ms[r.IntN(len(ms))], nil
	}
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

type quietLogger struct{ l *slog.Logger }

func (q quietLogger) Printf(format string, args ...any) {
	q.l.Debug(fmt.Sprintf(format, args...), "component", "harness-zk-client")
}

// freshClients counts the clients whose latest sample shows a loaded,
// fresh mirror.
func freshClients(clients []*client, wlog []zkmirror.Write, w scenarios.Workload) (fresh, total int) {
	within := w.FreshWithin.D()
	if within <= 0 {
		within = 2 * time.Second
	}
	for _, c := range clients {
		total++
		c.mu.Lock()
		n := len(c.samples)
		var s zkmirror.Sample
		if n > 0 {
			s = c.samples[n-1].s
		}
		alive := c.alive
		c.mu.Unlock()
		if !alive || n == 0 || s.HotKnown == 0 {
			continue
		}
		if zkmirror.Staleness(wlog, s.NextSeq, time.UnixMilli(s.UnixMS)) <= within {
			fresh++
		}
	}
	return fresh, total
}

func lockNote(locked bool) string {
	if !locked {
		return "; the kernel may reclaim those pages to make room for the heap, which then gets a little more than the limit"
	}
	return ", with the executable's pages locked in memory so that the kernel cannot reclaim them for the heap: the heap gets the memory limit, as in a local process"
}
