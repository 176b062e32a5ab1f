package execclient

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/infra/lineproto"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// workload is one variant's instances of the program.
type workload struct {
	env     *lab.Env
	cluster lab.Cluster
	s       *Settings
	group   *instances.Group
	ctx     context.Context
	stop    context.CancelFunc
	bg      sync.WaitGroup

	mu      sync.Mutex
	figs    lab.Result           // the figures the instances print or serve
	last    []map[string]float64 // per instance: its latest figures
	scrapes map[[2]int]context.CancelFunc
	// relays count each instance's traffic where the servers do not list
	// their client connections (nil otherwise).
	relays relays
}

func (kind) New(env *lab.Env, c lab.Cluster, s lab.Settings) (lab.Workload, error) {
	st := s.(*Settings)
	return &workload{env: env, cluster: c, s: st, last: make([]map[string]float64, st.Instances), scrapes: map[[2]int]context.CancelFunc{}}, nil
}

// Seed: the program brings its own data, if any.
func (w *workload) Seed(context.Context) error { return nil }

// Start launches the instances (spread over start_spread).
func (w *workload) Start(ctx context.Context) error {
	w.ctx, w.stop = context.WithCancel(ctx)
	var err error
	if w.relays, err = startRelays(w.env, w.cluster, w.s.Instances); err != nil {
		return err
	}
	seeds := w.env.Rand(1)
	clientSeeds := make([]uint64, w.s.Instances)
	for i := range clientSeeds {
		clientSeeds[i] = seeds.Uint64()
	}
	w.group = instances.Start(w.ctx, instances.Config{
		Env: w.env, Count: w.s.Instances, Prefix: "client", Role: "client", Cluster: w.cluster, Relayed: w.relays.counter(),
		Spread: w.s.StartSpread.D(), Restart: w.s.Restart, RestartDelay: w.s.RestartDelay.D(),
		Program: func(i, inc int) lab.Program {
			p := w.s.Program(w.instanceEnv(i, inc, clientSeeds[i]+uint64(inc)))
			p.Limits = lab.Limits{MemoryMB: w.s.MemoryLimitMB, Pids: w.s.PidsLimit, CPUCores: w.s.CPUs}
			return p
		},
		OnLine: w.onLine,
		OnExit: func(i, inc int, _ lab.Exit) { w.endScrape(i, inc) },
	})
	return nil
}

// instanceEnv is what an instance is told: where the servers are, who it
// is, its limits, and the scenario's settings.
func (w *workload) instanceEnv(i, inc int, seed uint64) map[string]string {
	env := w.relays.env(w.cluster, i)
	env["CHAOSLAB_CLIENT_ID"] = fmt.Sprintf("client-%02d", i+1)
	env["CHAOSLAB_INCARNATION"] = strconv.Itoa(inc)
	env["CHAOSLAB_SEED"] = strconv.FormatUint(seed, 10)
	env["CHAOSLAB_MEMORY_LIMIT_MB"] = strconv.Itoa(w.s.MemoryLimitMB)
	for k, v := range w.s.Settings {
		env["CHAOSLAB_"+strings.ToUpper(k)] = v
	}
	return env
}

// onLine records an instance's figures (the line protocol) and starts
// scraping an endpoint it names.
func (w *workload) onLine(i, inc int, line []byte) {
	l, ok := lineproto.Parse(line)
	if !ok {
		return
	}
	if l.Prometheus != "" {
		w.startScrape(i, inc, l.Prometheus)
	}
	w.record(i, w.env.Clock(l.Time(time.Now())), l.Figures)
}

func (w *workload) record(i int, t float64, figs map[string]float64) {
	id := w.group.ID(i)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last[i] == nil {
		w.last[i] = map[string]float64{}
	}
	for name, v := range figs {
		w.figs.Add("client."+name, id, "", t, v)
		w.last[i][name] = v
	}
}

// Steady counts the running instances that are ready.
func (w *workload) Steady() lab.Steady {
	st := lab.Steady{Total: w.s.Instances, What: "clients running"}
	if w.s.ReadyFigure != "" {
		st.What = "clients ready (" + w.s.ReadyFigure + " > 0)"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.s.Instances {
		if w.group == nil || !w.group.Alive(i) {
			continue
		}
		if w.s.ReadyFigure == "" || w.last[i][w.s.ReadyFigure] > 0 {
			st.Ready++
		}
	}
	return st
}

// Targets: every instance.
func (w *workload) Targets(group string) []lab.Target {
	if group != "clients" || w.group == nil {
		return nil
	}
	return instances.Targets(w.group, w.group.Len())
}

// Progress: instances alive, OOM kills, peak RSS, requests held at the servers.
func (w *workload) Progress() []slog.Attr {
	if w.group == nil {
		return nil
	}
	alive, ooms := 0, 0
	for i := range w.s.Instances {
		if w.group.Alive(i) {
			alive++
		}
		ooms += w.group.Summary(i, nil).OOMKills
	}
	rss, held := w.group.Latest()
	return []slog.Attr{slog.String("clients", fmt.Sprintf("%d/%d alive", alive, w.s.Instances)), slog.Int("OOM", ooms),
		slog.Int("held_at_servers", int(held)), slog.String("RSS", fmt.Sprintf("%.0f MiB", rss))}
}

// Stop ends the instances and the scrapes.
func (w *workload) Stop(context.Context) error {
	if w.stop != nil {
		w.stop()
	}
	if w.group != nil {
		w.group.Stop()
	}
	w.bg.Wait()
	return w.relays.close()
}

// Collect adds the figures, the outside series, the instances and totals.
func (w *workload) Collect(r *lab.Result, tl lab.Timeline) {
	w.mu.Lock()
	r.Series = append(r.Series, w.figs.Series...)
	w.mu.Unlock()
	w.group.Record(r)
	ooms, deaths := 0, 0
	for i := range w.s.Instances {
		sum := w.group.Summary(i, nil)
		r.Clients = append(r.Clients, sum)
		ooms += sum.OOMKills
		deaths += len(sum.Exits)
	}
	instances.SetExits(r, tl, r.Clients, ooms, deaths)
	if reqs, conns := w.group.Requests(), w.group.Connections(); reqs != nil {
		total, opened := 0.0, 0.0
		for i := range reqs {
			total += reqs[i]
			opened += conns[i]
		}
		r.SetMetric("clients.requests.total", total)
		r.SetMetric("clients.reconnects.total", max(0, opened-float64(len(reqs)+deaths)))
		r.SetMetric("clients.requests_per_s.max_from_fault", peakRate(r.Named(instances.SeriesRequests), tl.FaultStart()))
	}
	w.group.SetMemoryLimit(r, w.s.MemoryLimitMB)
}

// peakRate is the most requests one instance sent in a second, from t on
// (NaN without a fault).
func peakRate(series []*lab.Series, from float64) float64 {
	if math.IsNaN(from) {
		return math.NaN()
	}
	peak := 0.0
	for _, s := range series {
		for k := 1; k < len(s.Points); k++ {
			a, b := s.Points[k-1], s.Points[k]
			if a.T < from || b.T <= a.T {
				continue
			}
			peak = max(peak, float64(b.V-a.V)/(b.T-a.T))
		}
	}
	return peak
}
