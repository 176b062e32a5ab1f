package zkmirror

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/infra/lineproto"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// sample is one sample of one client incarnation, on the variant's clock.
type sample struct {
	t   float64
	inc int
	s   Sample
	// seq: the sample says how far the mirror has got (next_seq or max_seq).
	seq bool
	// has names what a user's client reported (nil: chaoslab's own agent,
	// which reports everything).
	has map[string]bool
}

// workload is one variant's mirrors, tree and writer.
type workload struct {
	env     *lab.Env
	cluster lab.Cluster
	s       *Settings
	tree    Tree
	hot     []string

	conn   *zk.Conn
	writer *Writer
	wlog   func() []Write
	group  supervisor
	stop   context.CancelFunc
	bg     sync.WaitGroup

	mu      sync.Mutex
	samples [][]sample // per client
	finals  [][]Sample // per client: the last sample of each ended incarnation
	last    map[[2]int]Sample
	// limit is the memory limit last seen enforced on a client (bytes).
	limit float64
	// switched are the strategies switch-strategy gave, per client.
	switched map[int]Switch
	// loadedAt is when the servers had counted a whole load from a silent
	// client (see silentLoaded), per client.
	loadedAt map[int]time.Time
}

func (kind) New(env *lab.Env, c lab.Cluster, s lab.Settings) (lab.Workload, error) {
	st := s.(*Settings)
	w := &workload{env: env, cluster: c, s: st, tree: st.Tree, last: map[[2]int]Sample{}, loadedAt: map[int]time.Time{}}
	w.hot = HotSet(w.tree, st.Writer.Share, env.Seed)
	w.samples = make([][]sample, st.Clients)
	w.finals = make([][]Sample, st.Clients)
	return w, nil
}

// Seed writes the tree on a connection of the harness's own.
func (w *workload) Seed(ctx context.Context) error {
	conn, _, err := zk.Connect(w.cluster.Endpoints(lab.FromHost), 30*time.Second, zk.WithLogger(quietLogger{w.env.Log}))
	if err != nil {
		return fmt.Errorf("connect harness client: %w", err)
	}
	w.conn = conn
	// Two minutes, and half a millisecond more per ballast znode.
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute+time.Duration(w.s.Ballast)*time.Millisecond/2)
	defer cancel()
	if err := Seed(sctx, conn, w.tree, w.hot, w.env.Log); err != nil {
		return err
	}
	w.env.Event("note", "harness", fmt.Sprintf("seeded %d znodes (%d hot) of %d bytes under %s", w.tree.Nodes(), len(w.hot), w.tree.DataBytes, w.tree.Root))
	if b := BallastTree(w.tree.Root, w.s.Ballast); b.Nodes() > 0 {
		if err := Seed(sctx, conn, b, nil, w.env.Log); err != nil {
			return fmt.Errorf("seed ballast: %w", err)
		}
		w.env.Event("note", "harness", fmt.Sprintf("seeded %d ballast znodes of %d bytes under %s, which no client reads", b.Nodes(), b.DataBytes, b.Root))
	}
	return nil
}

// Start starts the writer and the clients (spread over start_spread).
func (w *workload) Start(ctx context.Context) error {
	ctx, w.stop = context.WithCancel(ctx)
	w.writer = &Writer{Conn: w.conn, Hot: w.hot, Rate: w.s.Writer.RatePerSec, DataBytes: w.tree.DataBytes}
	w.wlog = w.writer.Log
	w.bg.Go(func() { w.writer.Run(ctx) })
	servers := w.cluster.Endpoints(lab.FromSite)
	seeds := w.env.Rand(1)
	clientSeeds := make([]uint64, w.s.Clients)
	for i := range clientSeeds {
		clientSeeds[i] = seeds.Uint64()
	}
	w.group = instances.Start(ctx, instances.Config{
		Env: w.env, Count: w.s.Clients, Prefix: "client", Role: "client",
		Spread: w.s.StartSpread.D(), Restart: w.s.Restart, RestartDelay: w.s.RestartDelay.D(),
		Program: func(i, inc int) lab.Program {
			id := fmt.Sprintf("client-%02d", i+1)
			if w.s.Program != nil {
				p := w.s.Program.Program(w.clientEnv(id, i, inc, clientSeeds[i]+uint64(inc)))
				p.Limits = lab.Limits{MemoryMB: w.s.MemoryLimitMB}
				return p
			}
			cfg := Config{Client: w.s.Client, ID: id, Servers: servers, Root: w.tree.Root,
				HotCount: len(w.hot), Seed: clientSeeds[i] + uint64(inc), Incarnation: inc, Control: w.controlPath(id)}
			w.mu.Lock()
			if sw, ok := w.switched[i]; ok {
				cfg.Strategy, cfg.Window = sw.Strategy, sw.Window
			}
			w.mu.Unlock()
			return lab.Program{Agent: KindName, Config: cfg, Limits: lab.Limits{MemoryMB: w.s.MemoryLimitMB}, Env: goMemLimit(w.s.MemoryLimitMB)}
		},
		Cluster: w.cluster,
		OnLine:  w.onLine,
		OnExit:  func(i, inc int, _ lab.Exit) { w.ended(i, inc) },
	})
	return nil
}

// clientEnv is what a user's mirror client is told, as environment
// variables: where the ensemble is, what to mirror, its limits.
func (w *workload) clientEnv(id string, i, inc int, seed uint64) map[string]string {
	env := w.cluster.ClientEnv(lab.FromSite, i)
	for k, v := range map[string]string{
		"CHAOSLAB_CLIENT_ID": id, "CHAOSLAB_INCARNATION": strconv.Itoa(inc), "CHAOSLAB_SEED": strconv.FormatUint(seed, 10),
		"CHAOSLAB_TREE_ROOT": w.tree.Root, "CHAOSLAB_TREE_ZNODES": strconv.Itoa(w.tree.Nodes()),
		"CHAOSLAB_SESSION_TIMEOUT_MS": strconv.FormatInt(w.s.SessionTimeout.D().Milliseconds(), 10),
		"CHAOSLAB_REPORT_INTERVAL_MS": strconv.FormatInt(w.s.ReportInterval.D().Milliseconds(), 10),
		"CHAOSLAB_MEMORY_LIMIT_MB":    strconv.Itoa(w.s.MemoryLimitMB),
	} {
		env[k] = v
	}
	return env
}

// onLine reads a client's sample (the line protocol, as any client's).
func (w *workload) onLine(i, inc int, line []byte) {
	l, ok := lineproto.Parse(line)
	if !ok {
		return
	}
	s := sampleOf(l, time.Now())
	enforced := 0.0
	if p := w.group.Proc(i); p != nil {
		enforced = float64(p.Stats().MemoryLimitBytes)
	}
	w.mu.Lock()
	if enforced > 0 {
		w.limit = enforced
	}
	defer w.mu.Unlock()
	smp := sample{t: w.env.Clock(time.UnixMilli(s.UnixMS)), inc: inc, s: s, seq: s.NextSeq > 0}
	if w.s.Program != nil {
		smp.has = map[string]bool{}
		for k := range l.Figures {
			smp.has[k] = true
		}
		for k := range l.Labels {
			smp.has[k] = true
		}
	}
	w.samples[i] = append(w.samples[i], smp)
	w.last[[2]int{i, inc}] = s
}

// ended keeps the last sample of an ended incarnation (its totals).
func (w *workload) ended(i, inc int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s, ok := w.last[[2]int{i, inc}]; ok {
		w.finals[i] = append(w.finals[i], s)
		delete(w.last, [2]int{i, inc})
	}
}

// Steady counts the clients whose latest sample shows a loaded, fresh
// mirror; a client that does not report its mirror is counted once it is
// silentLoaded.
func (w *workload) Steady() (st lab.Steady) {
	wlog := w.wlog()
	st = lab.Steady{Total: w.s.Clients, What: "mirrors fresh"}
	loaded := w.group.Requests()
	w.mu.Lock()
	defer w.mu.Unlock()
	silent := 0
	defer func() {
		switch {
		case silent == st.Total:
			st.What = fmt.Sprintf("silent clients loaded (by the servers' count of their requests: %d a znode, then %.0f s more)", silentReadsPerZnode, steadyWindow)
		case silent > 0:
			st.What = fmt.Sprintf("mirrors fresh (%d silent clients: by the servers' count of their requests)", silent)
		}
	}()
	for i, ss := range w.samples {
		if !w.group.Alive(i) {
			continue
		}
		if !w.reports(ss) {
			silent++
			if i < len(loaded) && w.silentLoaded(i, loaded[i], time.Now()) {
				st.Ready++
			}
			continue
		}
		s := ss[len(ss)-1].s
		loadedAll := w.s.Program == nil || s.Nodes == 0 || s.Nodes >= w.tree.Nodes()
		if loadedAll && s.HotKnown > 0 && Staleness(wlog, s.NextSeq, time.UnixMilli(s.UnixMS)) <= w.s.FreshWithin.D() {
			st.Ready++
		}
	}
	return st
}

// silentReadsPerZnode is what a mirror's load costs by the servers' count:
// a getChildren and a getData for every znode (Curator's and kazoo's
// TreeCache, TreeWatcher, the built-in client).
const silentReadsPerZnode = 2

// silentLoaded says whether a client that reports nothing has loaded its
// mirror: the servers have counted silentReadsPerZnode requests a znode
// from it (at one a znode a TreeCache is half-way through its walk), and
// that was steadyWindow seconds ago, so that the steady rate taken before
// the fault (beyondSteady) has a window clear of the walk. A client that
// reads less is taken as steady at the warm-up's deadline, and the
// timeline says how many were. Call with w.mu held.
func (w *workload) silentLoaded(i int, reqs float64, now time.Time) bool {
	if reqs < float64(silentReadsPerZnode*w.tree.Nodes()) {
		return false
	}
	at, ok := w.loadedAt[i]
	if !ok {
		w.loadedAt[i] = now
		return false
	}
	return now.Sub(at) >= time.Duration(steadyWindow*float64(time.Second))
}

// reports says whether a client reports its mirror's freshness.
func (w *workload) reports(ss []sample) bool {
	return len(ss) > 0 && ss[len(ss)-1].seq
}

// Progress: clients alive, OOM kills, requests queued at the clients,
// the largest client's RSS.
func (w *workload) Progress() []slog.Attr {
	alive, ooms, pending, rss := 0, 0, int64(0), 0.0
	for i := range w.s.Clients {
		if w.group.Alive(i) {
			alive++
		}
		ooms += w.group.Summary(i, nil).OOMKills
	}
	w.mu.Lock()
	for _, ss := range w.samples {
		if n := len(ss); n > 0 {
			pending += ss[n-1].s.InFlight + ss[n-1].s.Queued
			rss = max(rss, float64(ss[n-1].s.RSSBytes)/(1<<20))
		}
	}
	w.mu.Unlock()
	osRSS, _ := w.group.Latest()
	return []slog.Attr{slog.String("clients", fmt.Sprintf("%d/%d alive", alive, w.s.Clients)), slog.Int("OOM", ooms),
		slog.Int64("queued", pending), slog.String("RSS", fmt.Sprintf("%.0f MiB", max(rss, osRSS)))}
}

// Stop ends the clients and the writer.
func (w *workload) Stop(context.Context) error {
	if w.stop != nil {
		w.stop()
	}
	if w.group != nil {
		w.group.Stop()
	}
	w.bg.Wait()
	if w.conn != nil {
		w.conn.Close()
	}
	return nil
}

// Targets: every client (a fault on clients pauses or kills their processes).
func (w *workload) Targets(group string) []lab.Target {
	if group != "clients" || w.group == nil {
		return nil
	}
	ts := instances.Targets(w.group, w.group.Len())
	for i, t := range ts {
		ts[i] = &mirrorClient{Target: t.(*instances.Target), w: w}
	}
	return ts
}

// supervisor is what the workload needs of its clients' supervisor
// (instances.Group).
type supervisor interface {
	Len() int
	ID(i int) string
	Alive(i int) bool
	Proc(i int) lab.Proc
	Summary(i int, edit func(*lab.Instance)) lab.Instance
	Requests() []float64
	Latest() (rssMB, outstanding float64)
	Connections() []float64
	Record(r *lab.Result)
	SetMemoryLimit(r *lab.Result, limitMB int)
	Stop()
}

type quietLogger struct{ l *slog.Logger }

func (q quietLogger) Printf(format string, args ...any) {
	q.l.Debug(fmt.Sprintf(format, args...), "component", "harness-zk-client")
}

// sampleOf is a mirror's sample from a line: chaoslab's own agent's
// figures, or the documented ones a user's client may print ("pending";
// "nodes": the znodes below the root it holds, so that the warm-up waits
// until it has them all; "max_seq": the highest seq= it has seen in a
// znode's data, or "next_seq"; "reconnects").
func sampleOf(l lineproto.Line, at time.Time) Sample {
	f := l.Figures
	s := Sample{UnixMS: l.Time(at).UnixMilli(), ID: l.ID, State: l.Labels["state"],
		InFlight: int64(f["inflight"]), Queued: int64(f["queued"]), Completed: int64(f["completed"]),
		Errors: int64(f["errors"]), Reconnects: int64(f["reconnects"]), Sessions: int64(f["sessions"]),
		Refreshes: int64(f["refreshes"]), Frontier: int64(f["frontier"]), Cancelled: int64(f["cancelled"]),
		RSSBytes: int64(f["rss"]), Goroutines: int(f["goroutines"]), Nodes: int(f["nodes"]),
		HotKnown: int(f["hot_known"]), NextSeq: int64(f["next_seq"]), Strategy: l.Labels["strategy"]}
	if p, ok := f["pending"]; ok {
		s.InFlight, s.Queued = int64(p), 0
	}
	if m, ok := f["max_seq"]; ok && s.NextSeq == 0 {
		s.NextSeq, s.HotKnown = int64(m)+1, 1
	}
	return s
}

// GoMemoryShare is the share of its memory limit the built-in client's Go
// runtime is told (GOMEMLIMIT), as a JVM's heap (-Xmx) is set below its
// container's limit: garbage the collector can free then does not reach
// the kernel's limit during a first load, while the requests an unbounded
// queue holds are live, and do.
const GoMemoryShare = 0.8

func goMemLimit(limitMB int) []string {
	if limitMB <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("GOMEMLIMIT=%dMiB", int(float64(limitMB)*GoMemoryShare))}
}
