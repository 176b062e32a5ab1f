package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// workload is one variant's fleet, its load generator and its store.
type workload struct {
	env     *lab.Env
	cluster lab.Cluster
	s       *Settings
	prefix  string
	table   frontend.Table // what Seed wrote

	fleet *Fleet
	load  *Load
	reg   *clientv3.Client // the health check's reader of registrations
	stop  context.CancelFunc
	bg    sync.WaitGroup
}

func (kind) New(env *lab.Env, c lab.Cluster, s lab.Settings) (lab.Workload, error) {
	return &workload{env: env, cluster: c, s: s.(*Settings), prefix: "/chaoslab/" + env.RunID}, nil
}

// Seed writes the shard table into etcd.
func (w *workload) Seed(ctx context.Context) error {
	cli, err := w.etcd()
	if err != nil {
		return err
	}
	defer cli.Close()
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w.table = frontend.NewTable(w.s.Shards, w.s.BackendCells)
	if err := frontend.SeedStore(sctx, cli, w.prefix, w.table); err != nil {
		return err
	}
	w.env.Event("note", "harness", fmt.Sprintf("wrote the shard table to etcd: %d shards over %d back-end cells under %s", w.s.Shards, w.s.BackendCells, frontend.StorePrefix(w.prefix)))
	return nil
}

// etcd is a client of the variant's etcd as the harness reaches it.
func (w *workload) etcd() (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: w.cluster.Endpoints(lab.FromHost), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect etcd: %w", err)
	}
	return cli, nil
}

// Start starts the fleet (spread over start_spread) and the load.
func (w *workload) Start(ctx context.Context) error {
	ctx, w.stop = context.WithCancel(ctx)
	w.shareCPU()
	reg, err := w.etcd()
	if err != nil {
		return err
	}
	w.reg = reg
	f, err := Start(ctx, Config{Settings: w.s, Env: w.env, Etcd: w.cluster.Endpoints(lab.FromSite), Prefix: w.prefix,
		Registry: etcdRegistry{cli: reg, prefix: w.prefix}})
	if err != nil {
		return err
	}
	w.fleet = f
	w.env.Event("note", "harness", fmt.Sprintf("starting %d front-end servers over %s, each with at most %d threads", w.s.Servers, w.s.StartSpread, w.s.ThreadLimit))
	w.load = &Load{Fleet: f, Rate: w.s.RequestRate, Workers: w.s.MaxInFlight, Seed: w.env.Seed, Table: w.table}
	w.load.SetStart(w.env.T0)
	w.bg.Go(func() { w.load.Run(ctx) })
	return nil
}

// shareCPU holds the fleet to fleet_cpu where the site can; elsewhere the
// run says the budget was not enforced.
func (w *workload) shareCPU() {
	if w.s.FleetCPU <= 0 {
		return
	}
	sc, ok := w.env.Site.(lab.SharedCPU)
	if !ok {
		w.env.Event("note", "harness", fmt.Sprintf("fleet_cpu %g: not enforced on the %s placement; the fleet competes for the machine's CPU", w.s.FleetCPU, w.env.Site.Placement().Name()))
		return
	}
	if err := sc.ShareCPU(w.s.FleetCPU); err != nil {
		w.env.Event("note", "harness", fmt.Sprintf("fleet_cpu %g: not enforced: %v", w.s.FleetCPU, err))
		return
	}
	w.env.Event("note", "harness", fmt.Sprintf("the whole fleet held to %g cores together (fleet_cpu)", w.s.FleetCPU))
}

// Steady counts the servers routing.
func (w *workload) Steady() lab.Steady {
	ready, total := w.ready()
	return lab.Steady{Ready: ready, Total: total, What: "servers routing"}
}

func (w *workload) ready() (ready, total int) {
	for _, s := range w.fleet.Active() {
		total++
		if s.Ready() {
			ready++
		}
	}
	return ready, total
}

// Targets: the fleet itself (add-capacity, restart-fleet).
func (w *workload) Targets(group string) []lab.Target {
	if group != "fleet" || w.fleet == nil {
		return nil
	}
	return []lab.Target{w.fleet}
}

// Progress: servers routing, success, the most threads.
func (w *workload) Progress() []slog.Attr {
	ready, total := w.ready()
	maxThreads := 0
	for _, s := range w.fleet.Active() {
		sn := s.Snapshot()
		if n := len(sn.Samples); n > 0 {
			maxThreads = max(maxThreads, sn.Samples[n-1].Threads)
		}
	}
	succ := "-"
	if secs := w.load.Seconds(); len(secs) >= 2 && secs[len(secs)-2].Attempts > 0 {
		b := secs[len(secs)-2]
		succ = fmt.Sprintf("%.0f%%", 100*float64(b.OK)/float64(b.Attempts))
	}
	return []slog.Attr{slog.String("routing", fmt.Sprintf("%d/%d", ready, total)), slog.String("success", succ),
		slog.String("threads", fmt.Sprintf("%d of %d", maxThreads, w.s.ThreadLimit))}
}

// Stop ends the load and the fleet.
func (w *workload) Stop(context.Context) error {
	if w.stop != nil {
		w.stop()
	}
	w.bg.Wait()
	var errs []error
	if w.fleet != nil {
		errs = append(errs, w.fleet.Close())
	}
	if w.reg != nil {
		errs = append(errs, w.reg.Close())
	}
	return errors.Join(errs...)
}
