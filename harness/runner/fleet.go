package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/dockeretcd"
	"github.com/chaoslab/chaoslab/harness/etcdlocal"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/fleet"
	"github.com/chaoslab/chaoslab/harness/frontend"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// isFleet reports whether a scenario runs IL-0384's front-end fleet.
func isFleet(s *scenarios.Scenario) bool { return s.Workload.Kind == "kinesis-frontend" }

// fleetBackend runs the front-end fleet and its etcd cluster as local
// processes (the servers in cgroups whose pids.max is their thread limit),
// or as containers (--pids-limit) on a private network of the run.
type fleetBackend struct {
	etcdBin     *string
	docker      bool
	etcdImage   string
	clientImage string
}

func (b fleetBackend) Name() string {
	if b.docker {
		return "docker"
	}
	return "local"
}

func (fleetBackend) probe() faults.Target { return &fleet.Fleet{} }

func (b fleetBackend) Prepare(ctx context.Context, log *slog.Logger) error {
	if b.docker {
		if swept, err := docker.SweepStale(ctx); err != nil {
			log.Warn("sweep leftovers of earlier runs", "err", err)
		} else if !swept.Empty() {
			log.Info("removed leftovers of earlier runs", "swept", swept.String())
		}
		for _, img := range []string{b.etcdImage, b.clientImage} {
			ok, err := docker.ImageExists(ctx, img)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("prepare docker backend: image %s is missing: pull it, or build the local equivalents with `chaoslab images build`", img)
			}
		}
		return nil
	}
	bin, err := images.EtcdBinary(ctx, images.Options{Progress: progressLog{log}})
	if err != nil {
		return fmt.Errorf("prepare etcd: %w", err)
	}
	*b.etcdBin = bin
	return nil
}

func (fleetBackend) StartZooKeeper(context.Context, clusterSpec) (zkCluster, error) {
	return nil, errors.New("the fleet backend runs no ZooKeeper")
}

type progressLog struct{ log *slog.Logger }

func (p progressLog) Write(b []byte) (int, error) {
	p.log.Info(strings.TrimSpace(string(b)))
	return len(b), nil
}

func chooseFleetBackend(ctx context.Context, name string, s *scenarios.Scenario, o Options) (backend, string, error) {
	be := fleetBackend{etcdBin: new(string)}
	switch name {
	case "", "local":
		return be, "", nil
	case "auto":
		// Measured on a 2-core machine (Docker 20.10): the engine creates
		// the fleet's containers about one a second, which paces an
		// "all at once" restart by itself (it recovered in 38 s where 32
		// processes started together never did), and the static server
		// in the image runs 1-2 more threads than the local build, which
		// moves the fleet against the same thread limit. The scenario is
		// calibrated on processes; --backend docker runs it in containers.
		return be, "auto: the front-end fleet runs as local processes (each in a cgroup with pids.max); --backend docker runs it in containers, where the engine paces restarts by itself", nil
	case "docker":
		if err := docker.Available(ctx); err != nil {
			return nil, "", fmt.Errorf("choose backend: %w", err)
		}
		members := 3
		if s.Topology.Etcd != nil {
			members = s.Topology.Etcd.Members
		}
		fl := s.Workload.Fleet
		err := fleet.CheckNeighbours(fl.Servers + fl.Added() + members + 1)
		var et, etWhy string
		if err == nil {
			et, etWhy, err = resolveImage(ctx, "etcd", s, o)
		}
		if err == nil {
			var cl, clWhy string
			cl, clWhy, err = resolveImage(ctx, "client", s, o)
			if err == nil {
				why := "images: etcd " + et + " (" + etWhy + "), front-end servers " + cl + " (" + clWhy + ")"
				be.docker, be.etcdImage, be.clientImage = true, et, cl
				return be, why, nil
			}
		}
		return nil, "", fmt.Errorf("choose backend: %w", err)
	}
	return nil, "", fmt.Errorf("run scenario: unknown backend %q (want local, docker or auto)", name)
}

// etcdCluster is what a fleet run needs of its etcd cluster, local or in
// containers.
type etcdCluster interface {
	WaitHealthy(ctx context.Context) error
	Close() error
}

// runFleet is a variant of a kinesis-frontend scenario: a real etcd
// cluster, the fleet under its thread limits, the load generator, and the
// fault timeline (capacity added and removed, the operator's restart).
func (v *variantRun) runFleet(ctx context.Context) (err error) {
	logDir := filepath.Join(v.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	w := v.vr.Workload
	fl := w.Fleet
	v.t0 = time.Now()
	v.vr.StartedAt = v.t0

	be := v.backend.(fleetBackend)
	mgr, err := limits.NewManager(v.runID, v.log)
	if err != nil {
		return fmt.Errorf("create cgroups: %w", err)
	}
	defer func() { err = errors.Join(err, mgr.Close()) }()
	if mgr.Mode() == limits.ModeNone && !be.docker {
		return fmt.Errorf("limit threads: no cgroup can be used here (%s): the thread limit (pids.max) cannot be enforced, so IL-0384 cannot be replayed", mgr.Reason())
	}

	// etcd: the membership service and the configuration store.
	members := 3
	if t := v.s.Topology.Etcd; t != nil {
		members = t.Members
	}
	var logFiles []*os.File
	defer func() {
		for _, f := range logFiles {
			f.Close()
		}
	}()
	var (
		ec         etcdCluster
		cli        *clientv3.Client
		serverEtcd []string
		launcher   fleet.Launcher
	)
	if be.docker {
		dc, err := dockeretcd.StartCluster(ctx, dockeretcd.Options{Members: members, Image: be.etcdImage, RunID: v.runID, LogDir: logDir, Logger: v.log})
		if err != nil {
			return fmt.Errorf("start etcd: %w", err)
		}
		ec = dc
		defer func() { err = errors.Join(err, dc.Close()) }()
		// The servers reach etcd by address: no name lookups through the
		// engine's DNS, which is busy while dozens of containers start.
		for _, m := range dc.Members() {
			ip, err := m.Container().IP(ctx, dc.Network())
			if err != nil || !ip.IsValid() {
				return fmt.Errorf("find address of %s: %v", m.Name(), err)
			}
			serverEtcd = append(serverEtcd, "http://"+net.JoinHostPort(ip.String(), "2379"))
		}
		if cli, err = dc.NewClient(); err != nil {
			return err
		}
		launcher = fleet.ContainerLauncher{Image: be.clientImage, Network: dc.Network(), RunID: v.runID, Logger: v.log}
	} else {
		lc, err := etcdlocal.Start(ctx, etcdlocal.Options{
			Members: members, Binary: *be.etcdBin, Dir: filepath.Join(v.dir, "etcd-data"), Logger: v.log,
			Logs: func(name string) io.Writer {
				f, err := os.Create(filepath.Join(logDir, name+".log"))
				if err != nil {
					return io.Discard
				}
				logFiles = append(logFiles, f)
				return f
			},
		})
		if err != nil {
			return fmt.Errorf("start etcd: %w", err)
		}
		ec = lc
		defer func() {
			err = errors.Join(err, lc.Close())
			_ = os.RemoveAll(filepath.Join(v.dir, "etcd-data"))
		}()
		serverEtcd = lc.Endpoints()
		if cli, err = lc.Client(); err != nil {
			return err
		}
		launcher = fleet.ProcessLauncher{Binary: v.opts.ClientBinary, Args: v.opts.ClientArgs, Limits: mgr}
	}
	defer cli.Close()
	v.event("health", "etcd", fmt.Sprintf("%d etcd members serving, one leader (%s backend)", members, be.Name()))
	prefix := "/chaoslab/" + v.runID
	cells := fl.BackendCells
	if cells == 0 {
		cells = 16
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = frontend.SeedStore(sctx, cli, prefix, frontend.NewTable(fl.Shards, cells))
	cancel()
	if err != nil {
		return err
	}
	v.event("note", "harness", fmt.Sprintf("wrote the shard table to etcd: %d shards over %d back-end cells under %s", fl.Shards, cells, frontend.StorePrefix(prefix)))

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	lease := fl.LeaseTTL.D()
	if lease <= 0 {
		lease = 3 * time.Second
	}
	f, err := fleet.Start(runCtx, fleet.Config{
		Servers: fl.Servers, Added: fl.Added(),
		Launcher: launcher, Etcd: serverEtcd, Prefix: prefix,
		PeerThreads: fl.PeerThreads, PoolThreads: fl.PoolThreads, CellSize: fl.CellSize, Bootstrap: fl.Bootstrap,
		BootstrapTimeout: fl.BootstrapTimeout.D(), LearnSpread: fl.LearnSpread.D(), Heartbeat: fl.Heartbeat.D(),
		LeaseTTL: int(math.Ceil(lease.Seconds())), GoMaxProcs: fl.GoMaxProcs,
		ThreadLimit: fl.ThreadLimit, CPUCores: fl.CPUQuota,
		StartSpread: w.StartSpread.D(), RestartRate: fl.RestartRate,
		HealthGrace: fl.HealthGrace.D(), HealthTimeout: fl.HealthTimeout.D(), HealthFailures: fl.HealthFailures,
		Seed: uint64(v.seed), LogDir: logDir, Clock: v.clock, Logger: v.log,
		OnEvent: v.event,
	})
	if err != nil {
		return err
	}
	v.event("note", "harness", fmt.Sprintf("starting %d front-end servers over %s, each with at most %d threads", fl.Servers, w.StartSpread, fl.ThreadLimit))
	load := &fleet.Load{Fleet: f, Rate: fl.RequestRate, Workers: w.Clients, Seed: uint64(v.seed)}
	load.SetStart(v.t0)
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); load.Run(runCtx) }()
	go func() { defer bg.Done(); v.fleetProgress(runCtx, f, load) }()

	ferr := v.fleetTimeline(runCtx, f, ec)

	stopRun()
	bg.Wait()
	cerr := f.Close()
	v.collectFleet(f, load)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(ferr, cerr)
}

// fleetTimeline waits out the warm-up (and until every server routes, up to
// as long again), then injects each fault with etcd's and the fleet's
// health checked before and after.
func (v *variantRun) fleetTimeline(ctx context.Context, f *fleet.Fleet, ec etcdCluster) error {
	tl := v.s.Timeline
	warmEnd := v.t0.Add(tl.Warmup.D())
	if !sleepUntil(ctx, warmEnd) {
		return nil
	}
	wctx, cancel := context.WithDeadline(ctx, warmEnd.Add(tl.Warmup.D()))
	werr := f.WaitReady(wctx)
	cancel()
	if ctx.Err() != nil {
		return nil
	}
	ready, total := fleetReady(f)
	if werr == nil {
		v.event("steady", "fleet", fmt.Sprintf("all %d servers routing after %.1fs of warm-up", total, v.clock(time.Now())))
	} else {
		v.event("steady", "fleet", fmt.Sprintf("warm-up ended with %d of %d servers routing", ready, total))
	}
	shift := time.Since(warmEnd)
	warmEnd = time.Now()
	v.runEnd = v.t0.Add(v.s.RunLength() + shift)
	var errs []error
	for i, step := range tl.Faults {
		if !sleepUntil(ctx, warmEnd.Add(step.At.D())) {
			return nil
		}
		flt, err := faults.Get(step.Fault)
		if err != nil {
			return err
		}
		if err := flt.Available(f); err != nil {
			errs = append(errs, err)
			continue
		}
		v.fleetHealth(ctx, "before "+step.Fault, f, ec)
		fw := reports.FaultWindow{Fault: step.Fault, Target: step.Target, Member: "fleet", Start: v.clock(time.Now())}
		v.event("fault", "fleet", fmt.Sprintf("%s for %s", step.Fault, step.Duration))
		ierr := flt.Inject(ctx, f, step.Duration.D())
		fw.End = v.clock(time.Now())
		if ierr != nil && ctx.Err() == nil {
			fw.Detail = ierr.Error()
			errs = append(errs, fmt.Errorf("fault %d: %w", i, ierr))
		}
		v.vr.Faults = append(v.vr.Faults, fw)
		v.event("fault-end", "fleet", step.Fault+" ended")
		v.fleetHealth(ctx, "after "+step.Fault, f, ec)
	}
	sleepUntil(ctx, v.runEnd)
	return errors.Join(errs...)
}

func fleetReady(f *fleet.Fleet) (ready, total int) {
	for _, s := range f.Active() {
		total++
		if s.Ready() {
			ready++
		}
	}
	return ready, total
}

// fleetHealth records etcd's health (which must hold: it is the lab's
// store, not the system under test) and how many servers route.
func (v *variantRun) fleetHealth(ctx context.Context, when string, f *fleet.Fleet, ec etcdCluster) {
	if ctx.Err() != nil {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := ec.WaitHealthy(hctx)
	cancel()
	ready, total := fleetReady(f)
	if err != nil {
		v.event("health", "etcd", when+": etcd NOT healthy: "+err.Error())
	}
	v.event("health", "fleet", fmt.Sprintf("%s: etcd healthy; %d of %d front-end servers routing", when, ready, total))
}

// fleetProgress logs a line every 10 s for a person watching.
func (v *variantRun) fleetProgress(ctx context.Context, f *fleet.Fleet, load *fleet.Load) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ready, total := fleetReady(f)
		maxThreads := 0
		for _, s := range f.Active() {
			sn := s.Snapshot()
			if n := len(sn.Samples); n > 0 {
				maxThreads = max(maxThreads, sn.Samples[n-1].Threads)
			}
		}
		succ := "-"
		secs := load.Seconds()
		if n := len(secs); n >= 2 && secs[n-2].Attempts > 0 {
			succ = fmt.Sprintf("%.0f%%", 100*float64(secs[n-2].OK)/float64(secs[n-2].Attempts))
		}
		v.log.Info("progress", "t", fmt.Sprintf("%.0fs", v.clock(time.Now())), "routing", fmt.Sprintf("%d/%d", ready, total),
			"success", succ, "max_threads", maxThreads, "limit", v.vr.Workload.Fleet.ThreadLimit)
	}
}

// collectFleet turns what the fleet and the load generator recorded into
// the variant's series, server summaries and metrics.
func (v *variantRun) collectFleet(f *fleet.Fleet, load *fleet.Load) {
	vr := v.vr
	fl := vr.Workload.Fleet
	v.mu.Lock()
	vr.Events = append(vr.Events, v.events...)
	v.mu.Unlock()
	sort.SliceStable(vr.Events, func(i, j int) bool { return vr.Events[i].T < vr.Events[j].T })

	// Per server: threads, and a summary like a client's.
	var snaps []fleet.Snapshot
	for _, s := range f.Servers() {
		snaps = append(snaps, s.Snapshot())
	}
	readyAt := map[int]int{} // second -> servers routing
	var threadExits, pidsRefused float64
	for _, sn := range snaps {
		th := vr.SeriesFor("server.threads", sn.ID, "threads")
		for _, p := range sn.Samples {
			if p.Up {
				th.Points = append(th.Points, reports.Point{T: p.T, V: verdict.Float(p.Threads)})
			} else {
				th.Points = append(th.Points, reports.Point{T: p.T, V: verdict.Float(math.NaN())})
			}
			if p.Ready {
				readyAt[int(p.T)]++
			}
		}
		cs := reports.ClientSummary{ID: sn.ID, Starts: sn.Starts, Log: "logs/" + filepath.Base(sn.Log)}
		for _, e := range sn.Exits {
			if e.ThreadLimit {
				threadExits++
			}
			pidsRefused += float64(e.PidsLimitHit)
			if e.ByHarness == "end of run" {
				continue
			}
			cs.Exits = append(cs.Exits, reports.Exit{T: e.T, Code: e.Code, Signal: e.Signal, How: e.How})
		}
		vr.Clients = append(vr.Clients, cs)
	}

	// Per second: success over the fleet and per server.
	secs := load.Seconds()
	fs := vr.SeriesFor("fleet.routing_success", "fleet", "share")
	p99 := vr.SeriesFor("fleet.routing_p99_ms", "fleet", "ms")
	rd := vr.SeriesFor("fleet.servers_routing", "fleet", "servers")
	for _, s := range secs {
		t := float64(s.Sec) + 0.5
		if s.Attempts > 0 {
			fs.Points = append(fs.Points, reports.Point{T: t, V: verdict.Float(float64(s.OK) / float64(s.Attempts))})
		}
		if s.OK > 0 {
			p99.Points = append(p99.Points, reports.Point{T: t, V: verdict.Float(s.P99MS)})
		}
		rd.Points = append(rd.Points, reports.Point{T: t, V: verdict.Float(readyAt[s.Sec])})
		ids := make([]string, 0, len(s.Servers))
		for id := range s.Servers {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			b := s.Servers[id]
			vr.SeriesFor("server.routing_success", id, "share").Points = append(vr.SeriesFor("server.routing_success", id, "share").Points,
				reports.Point{T: t, V: verdict.Float(float64(b.OK) / float64(b.Attempts))})
		}
	}

	m := map[string]verdict.Float{}
	set := func(k string, x float64) { m[k] = verdict.Float(x) }
	// Windows from the fault timeline.
	var trig, restart *reports.FaultWindow
	for i := range vr.Faults {
		switch vr.Faults[i].Fault {
		case "add-capacity":
			if trig == nil {
				trig = &vr.Faults[i]
			}
		case "restart-fleet":
			if restart == nil {
				restart = &vr.Faults[i]
			}
		}
	}
	ratio := func(from, to float64, server string) float64 {
		att, ok := 0, 0
		for _, s := range secs {
			t := float64(s.Sec)
			if t < from || t >= to {
				continue
			}
			if server == "" {
				att += s.Attempts
				ok += s.OK
			} else if b := s.Servers[server]; b != nil {
				att += b.Attempts
				ok += b.OK
			}
		}
		if att == 0 {
			return math.NaN()
		}
		return float64(ok) / float64(att)
	}
	end := 0.0
	if n := len(secs); n > 0 {
		end = float64(secs[n-1].Sec) // the last, partial second is left out
	}
	maxThreads, beforeMax := 0.0, 0.0
	for _, sn := range snaps {
		for _, p := range sn.Samples {
			maxThreads = math.Max(maxThreads, float64(p.Threads))
			if trig == nil || p.T < trig.Start {
				beforeMax = math.Max(beforeMax, float64(p.Threads))
			}
		}
	}
	set("fleet.threads.max", maxThreads)
	set("fleet.threads.before_trigger_max", beforeMax)
	if fl.ThreadLimit > 0 {
		set("fleet.threads.max_ratio_to_limit", maxThreads/float64(fl.ThreadLimit))
	}
	set("fleet.thread_limit_exits", threadExits)
	set("fleet.pids_limit_refusals", pidsRefused)
	removals := 0
	for _, sn := range snaps {
		removals += sn.Removals
	}
	set("fleet.health_removals", float64(removals))
	set("fleet.routing_success.end", ratio(end-10, end, ""))
	if trig != nil {
		set("fleet.routing_success.before_trigger", ratio(trig.Start-10, trig.Start, ""))
		set("fleet.routing_success.during_trigger", ratio(trig.Start, trig.End, ""))
		from := trig.Start + fl.LearnSpread.D().Seconds()
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, sn := range snaps {
			if sn.Added {
				continue
			}
			r := ratio(from, trig.End, sn.ID)
			if math.IsNaN(r) {
				continue
			}
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
		if !math.IsInf(lo, 1) {
			set("fleet.routing_success.min_server_after_trigger", lo)
			set("fleet.routing_success.max_server_after_trigger", hi)
		}
	}
	if restart != nil {
		// The first second from which every second to the end routes >= 99%.
		rec := math.Inf(1)
		for i := len(secs) - 1; i >= 0; i-- {
			s := secs[i]
			t := float64(s.Sec)
			if t >= end {
				continue
			}
			if t < restart.Start || s.Attempts == 0 || float64(s.OK)/float64(s.Attempts) < 0.99 {
				break
			}
			rec = t - restart.Start
		}
		// Recovered only if it lasted: at least 5 s before the end.
		if end-(restart.Start+rec) < 5 {
			rec = math.Inf(1)
		}
		set("fleet.recovery_after_restart_s", math.Max(rec, 0))
	}
	vr.Metrics = m
}
