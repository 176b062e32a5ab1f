package dblb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgconsul"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/consul"
)

// workload is one variant's database, registration and app pods.
type workload struct {
	env     *lab.Env
	cluster lab.Cluster
	s       *Settings

	pg     *pgcluster.Cluster
	reg    *pgconsul.Registration
	procs  []*process
	fwds   []*forwarder
	agents []agentMeter
	rec    *recorder
	group  *instances.Group // a user's app pods (Settings.Program)

	cancel context.CancelFunc
	bg     sync.WaitGroup
	reqs   sync.WaitGroup

	mu      sync.Mutex
	samples []dbSample
	// A user's pods: proxies to the primary, the replicas' statement
	// logs, and what they counted so far per server (primary first) and
	// pod.
	proxies  []*pgProxy
	stmtLogs []*pgcluster.StatementLog
	arrived  [][]arrivals
}

// dbSample is one reading of every PostgreSQL server and of the pods.
type dbSample struct {
	t         float64
	servers   []pgcluster.Metrics // primary first; a zero value when unread
	ok        []bool
	noReplica int
	lookups   [][3]int64 // per pod: answered, empty, failed
	agents    []agentMem // per client agent, in w.agents' order
	// arrived is how many statements of a user's pods each server had
	// started, per server (primary first) and pod, cumulative (its
	// statement log); nil for the kind's own pods.
	arrived [][]arrivals
}

func (kind) New(env *lab.Env, c lab.Cluster, s lab.Settings) (lab.Workload, error) {
	return &workload{env: env, cluster: c, s: s.(*Settings), rec: newRecorder(env.T0)}, nil
}

// Seed starts PostgreSQL, fills the table, and registers the replicas at
// a Consul server with their lag checks.
func (w *workload) Seed(ctx context.Context) error {
	opts := []pgcluster.Option{pgcluster.WithReplicas(w.s.Replicas), pgcluster.WithLogger(w.env.Log),
		pgcluster.WithSetting("max_connections", strconv.Itoa(w.s.MaxConnections)), pgcluster.WithPrimaryCPU(w.s.PrimaryCPU)}
	if w.s.Program != nil { // a user's pods are counted at the servers
		opts = append(opts, pgcluster.WithStatementLog())
	}
	pg, err := pgcluster.Start(ctx, w.env.Site, opts...)
	if err != nil {
		return fmt.Errorf("seed database: %w", err)
	}
	w.pg = pg
	if err := w.fill(ctx); err != nil {
		return err
	}
	if w.s.Program != nil {
		if err := w.programSeed(ctx); err != nil {
			return err
		}
	}
	srv, err := consul.ServerAPI(w.cluster)
	if err != nil {
		return fmt.Errorf("seed database: %w", err)
	}
	w.reg, err = pgconsul.Register(ctx, srv, pg, pgconsul.WithLogger(w.env.Log))
	if err != nil {
		return fmt.Errorf("seed database: %w", err)
	}
	w.env.Event("note", "harness", fmt.Sprintf("PostgreSQL 15: primary %s (held to %g cores) and %d streaming replicas; %d rows; replicas registered at a Consul server as replica.patroni with lag checks (8 MB / 60 s)",
		pg.Primary().Addr(), w.s.PrimaryCPU, w.s.Replicas, w.s.Rows))
	return nil
}

// fill creates the table the app reads and writes, and waits until the
// replicas have it.
func (w *workload) fill(ctx context.Context) error {
	p := w.pg.Primary().Pool()
	if _, err := p.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL)`); err != nil {
		return fmt.Errorf("fill table: %w", err)
	}
	if _, err := p.Exec(ctx, `INSERT INTO items SELECT i, i % 97 FROM generate_series(0, $1::int - 1) i`, w.s.Rows); err != nil {
		return fmt.Errorf("fill table: %w", err)
	}
	if _, err := p.Exec(ctx, `ANALYZE items`); err != nil {
		return fmt.Errorf("fill table: %w", err)
	}
	for _, r := range w.pg.Replicas() {
		for {
			var n int
			if err := r.Pool().QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n); err == nil && n == w.s.Rows {
				break
			}
			if !lab.Sleep(ctx, 100*time.Millisecond) {
				return fmt.Errorf("wait for replica %s: %w", r.Name(), ctx.Err())
			}
		}
	}
	return nil
}

// Start starts one pod per Consul client agent, each of Processes
// processes looking the replicas up at that agent.
func (w *workload) Start(ctx context.Context) error {
	dns, err := consul.AgentDNSAddrs(w.cluster)
	if err != nil {
		return fmt.Errorf("start pods: %w", err)
	}
	if len(dns) == 0 {
		return errors.New("start pods: the consul topology has no client agents (a pod asks its own)")
	}
	// The lab's own pods run in this process; a user's run where the
	// placement runs them, and reach their forwarders and proxies where
	// the run's network reaches this process (loopback on local).
	host := "127.0.0.1"
	if w.s.Program != nil {
		if host, err = lab.ControllerHost(ctx, w.env.Site); err != nil {
			return fmt.Errorf("start pods: %w", err)
		}
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	rng := w.env.Rand(206)
	asked := make([]string, len(dns))
	for i, addr := range dns {
		if w.s.Resolver == ResolverForwarder {
			f, err := startForwarder(host, addr, w.s.LookupTimeout.D()/2, w.env.Log)
			if err != nil {
				return fmt.Errorf("start pods: %w", err)
			}
			w.fwds = append(w.fwds, f)
			addr = f.Addr()
		}
		asked[i] = addr
		for j := range w.s.Processes {
			if w.s.Program != nil {
				break
			}
			id := fmt.Sprintf("pod-%d-p%d", i+1, j+1)
			p := newProcess(id, i, addr, w.pg.Primary().Addr(), w.s, w.rec, rng.Uint64())
			w.procs = append(w.procs, p)
			w.bg.Go(func() { p.discover(ctx) })
			w.bg.Go(func() { p.load(ctx, &w.reqs) })
		}
	}
	if w.s.Program != nil {
		if err := w.startPrograms(ctx, host, asked); err != nil {
			return fmt.Errorf("start pods: %w", err)
		}
	}
	w.agents = agentMeters(ctx, w.env, w.cluster)
	w.bg.Go(func() { lab.Every(ctx, time.Second, func() { w.sample(ctx) }) })
	w.env.Event("note", "harness", fmt.Sprintf("started %d app pods (program: %s), each pod asking its own agent", len(dns), w.s.program()))
	return nil
}

// sample reads every server's load and the pods' discovery.
func (w *workload) sample(ctx context.Context) {
	d := dbSample{t: w.env.Now()}
	for _, s := range w.pg.Servers() {
		m, err := s.Metrics(ctx)
		d.servers = append(d.servers, m)
		d.ok = append(d.ok, err == nil)
	}
	pods := map[int]*[3]int64{}
	for _, p := range w.procs {
		if p.listed() == 0 {
			d.noReplica++
		}
		if pods[p.pod] == nil {
			pods[p.pod] = &[3]int64{}
		}
		c := pods[p.pod]
		c[0] += p.answered.Load()
		c[1] += p.empty.Load()
		c[2] += p.failed.Load()
	}
	for i := range len(pods) {
		d.lookups = append(d.lookups, *pods[i])
	}
	if w.s.Program != nil {
		for _, f := range w.fwds {
			d.lookups = append(d.lookups, f.lookups())
		}
	}
	d.agents = w.sampleAgents(ctx)
	w.mu.Lock()
	if w.s.Program != nil {
		d.arrived = w.readStatements()
	}
	w.samples = append(w.samples, d)
	w.mu.Unlock()
}

// Steady counts the processes with replicas listed.
func (w *workload) Steady() lab.Steady {
	if w.s.Program != nil {
		return w.programSteady()
	}
	n := 0
	for _, p := range w.procs {
		if p.listed() > 0 {
			n++
		}
	}
	return lab.Steady{Ready: n, Total: len(w.procs), What: "app processes with replicas listed"}
}

func (w *workload) Targets(string) []lab.Target { return nil }

// Progress: processes with replicas, the share of reads at the primary
// in the last full second, the primary's connections.
func (w *workload) Progress() []slog.Attr {
	st := w.Steady()
	share := "-"
	now := w.env.Now()
	if win := w.rec.window(math.Floor(now)-1, math.Floor(now)); !math.IsNaN(win.primaryShare()) {
		share = fmt.Sprintf("%.0f%%", 100*win.primaryShare())
	}
	conns := "-"
	w.mu.Lock()
	if n := len(w.samples); n > 0 && w.samples[n-1].ok[0] {
		conns = fmt.Sprintf("%d/%d", w.samples[n-1].servers[0].Connections, w.s.MaxConnections)
	}
	w.mu.Unlock()
	return []slog.Attr{slog.String("replicas listed", fmt.Sprintf("%d/%d", st.Ready, st.Total)),
		slog.String("reads at primary", share), slog.String("primary conns", conns)}
}

// Stop ends the pods, deregisters the replicas and stops PostgreSQL.
func (w *workload) Stop(context.Context) error {
	if w.cancel != nil {
		w.cancel()
	}
	w.bg.Wait()
	w.reqs.Wait()
	if w.group != nil {
		w.group.Stop()
	}
	var errs []error
	for _, px := range w.proxies {
		errs = append(errs, px.Close())
	}
	for _, p := range w.procs {
		p.close()
	}
	for _, f := range w.fwds {
		errs = append(errs, f.Close())
	}
	if w.reg != nil {
		errs = append(errs, w.reg.Close())
	}
	if w.pg != nil {
		errs = append(errs, w.pg.Close())
	}
	return errors.Join(errs...)
}
