package instances

import (
	"context"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/record"
)

// What every supervised instance is measured by from the outside, whether
// or not its program reports anything: its process as the kernel counts it,
// and (where the cluster lists its client connections) its requests as the
// servers count them.
const (
	SeriesRSS         = "client.os_rss_mb"
	SeriesMemory      = record.SeriesClientMemory
	SeriesThreads     = "client.threads"
	SeriesCPU         = "client.cpu_s"
	SeriesOutstanding = "client.server_outstanding"
	SeriesRequests    = "client.server_requests"
	SeriesConnections = "client.server_connections"
)

// Series are the outside series a group records.
func Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: SeriesOutstanding, Title: "Requests of each client the servers have not answered yet (the servers' view: their list of connections, or a relay in front of the client)", Unit: "requests", ServerView: true},
		{Name: SeriesRequests, Title: "Requests the servers received from each client (cumulative, the servers' view)", Unit: "requests", ServerView: true},
		{Name: SeriesConnections, Title: "Connections each client opened to the servers (cumulative, the servers' view)", Unit: "connections"},
		MemoryDef(),
		{Name: SeriesRSS, Title: "Client RSS (MiB, /proc): the pages it maps, not what the memory limit counts", Unit: "MiB"},
		{Name: SeriesThreads, Title: "Client threads (/proc)", Unit: "threads"},
		{Name: SeriesCPU, Title: "Client CPU time (s, cumulative, /proc)", Unit: "s"},
	}
}

// MemoryDef is the chart of what the memory limit is judged against: the
// memory the kernel charges to each instance's cgroup.
func MemoryDef() lab.SeriesDef {
	return lab.SeriesDef{Name: SeriesMemory, Title: "Client memory charged to its cgroup (MiB): what the memory limit counts", Unit: "MiB", Marks: []string{"oom-kill"}}
}

// Metrics are the outside metrics every group's kind can declare.
func Metrics() []lab.MetricDef {
	red := func(series, reduce, window string) *lab.Reducer {
		return &lab.Reducer{Series: series, Reduce: reduce, Window: window}
	}
	return []lab.MetricDef{
		{Name: "clients.os_rss_mb.max", Unit: "MiB", Doc: "peak RSS of any client process as the kernel counts it (/proc), whatever the client reports", Reducer: red(SeriesRSS, "max", "")},
		{Name: "clients.memory_mb.max", Unit: "MiB", Doc: "peak memory the kernel charged to any client's cgroup (memory.usage_in_bytes or memory.current): what the memory limit counts", Reducer: red(SeriesMemory, "max", "")},
		{Name: "clients.threads.max", Unit: "threads", Doc: "most threads of any client process (/proc)", Reducer: red(SeriesThreads, "max", "")},
		{Name: "clients.server_outstanding.max_from_fault", Unit: "requests", Doc: "from the first fault on, the most requests of one client the servers held unanswered (ZooKeeper's cons; on etcd and Consul a relay of the lab's in front of the client: open gRPC streams, watches included, or HTTP requests not answered)", Reducer: red(SeriesOutstanding, "max", "from-fault"), ServerView: true},
		{Name: "clients.oom_kills", Unit: "processes", Doc: "from the first fault on (the whole run when no fault ran), client processes killed by the kernel's OOM killer (cgroup counters, kernel log, or the engine's state)"},
		{Name: "clients.deaths", Unit: "processes", Doc: "from the first fault on (the whole run when no fault ran), client processes that exited before the end of the run, for any reason"},
		{Name: "clients.oom_kills_before_fault", Unit: "processes", Doc: "client processes OOM-killed before the first fault: the steady state wants none (the variant is inconclusive otherwise)"},
		{Name: "clients.deaths_before_fault", Unit: "processes", Doc: "client processes that exited before the first fault: the steady state wants none (the variant is inconclusive otherwise)"},
	}
}

// outside samples every running instance once a second.
type outside struct {
	g *Group

	mu    sync.Mutex
	last  map[string]float64 // per connection (member/remote): packets received
	reqs  []float64          // per instance: requests the servers received, cumulative
	conns []float64          // per instance: connections seen
	rss   []float64          // per instance: the last RSS sample (MiB)
	held  []float64          // per instance: the last outstanding sample
	// enforced is the largest memory limit in force seen on an instance
	// (bytes; a container's also holds its executable's page cache).
	enforced float64
	res      lab.Result
}

func (o *outside) run(ctx context.Context) {
	o.last = map[string]float64{}
	n := len(o.g.insts)
	o.reqs, o.conns, o.rss, o.held = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	lab.Every(ctx, time.Second, func() {
		o.sampleProcs()
		if cs, ok := o.g.cfg.Cluster.(lab.ConnSampler); ok {
			o.sampleConns(ctx, cs)
		} else if o.g.cfg.Relayed != nil {
			o.sampleRelayed(o.g.cfg.Relayed)
		}
	})
}

func (o *outside) sampleProcs() {
	now := o.g.cfg.Env.Now()
	for i := range o.g.insts {
		p := o.g.Proc(i)
		if p == nil {
			continue
		}
		st := p.Stats()
		if st.RSSBytes == 0 {
			continue // exited and not yet reaped: nothing of it is measured
		}
		id := o.g.insts[i].id
		o.mu.Lock()
		o.rss[i] = float64(st.RSSBytes) / (1 << 20)
		o.res.Add(SeriesRSS, id, "MiB", now, o.rss[i])
		o.enforced = max(o.enforced, float64(st.MemoryLimitBytes))
		if st.MemoryChargedBytes > 0 {
			o.res.Add(SeriesMemory, id, "MiB", now, float64(st.MemoryChargedBytes)/(1<<20))
		}
		o.res.Add(SeriesThreads, id, "threads", now, float64(st.Threads))
		o.res.Add(SeriesCPU, id, "s", now, st.CPUSeconds)
		o.mu.Unlock()
	}
}

// sampleConns maps each client connection the servers list to the
// instance whose process holds it.
func (o *outside) sampleConns(ctx context.Context, cs lab.ConnSampler) {
	conns := cs.Connections(ctx)
	owner := o.g.cfg.Env.Site.Owners()
	now := o.g.cfg.Env.Now()
	procs := map[lab.Proc]int{}
	for i := range o.g.insts {
		if p := o.g.Proc(i); p != nil {
			procs[p] = i
		}
	}
	out := make([]float64, len(o.g.insts))
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range conns {
		i, ok := procs[owner(c.Remote)]
		if !ok {
			continue
		}
		// A connection is its server and the client's address (its session
		// id appears only once the handshake is done); a count that went
		// down is a new connection on a reused port.
		key := c.Member + "/" + c.Remote
		prev, seen := o.last[key]
		if !seen || c.Received < prev {
			o.conns[i]++
			prev = 0
		}
		o.reqs[i] += c.Received - prev
		o.last[key] = c.Received
		out[i] += c.Outstanding
	}
	o.addConns(now, out)
}

// sampleRelayed takes each instance's figures from its relay.
func (o *outside) sampleRelayed(c Counter) {
	now := o.g.cfg.Env.Now()
	out := make([]float64, len(o.g.insts))
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range o.g.insts {
		o.conns[i], o.reqs[i], out[i] = c.Counts(i)
	}
	o.addConns(now, out)
}

// addConns records the requests held (out, per instance), and the
// requests and connections so far; o.mu is held.
func (o *outside) addConns(now float64, out []float64) {
	copy(o.held, out)
	for i, in := range o.g.insts {
		if o.g.Proc(i) == nil && out[i] == 0 {
			continue
		}
		o.res.Add(SeriesOutstanding, in.id, "requests", now, out[i])
		o.res.Add(SeriesRequests, in.id, "requests", now, o.reqs[i])
		o.res.Add(SeriesConnections, in.id, "connections", now, o.conns[i])
	}
}

// Record adds the outside series to a result.
func (g *Group) Record(r *lab.Result) {
	if g.out == nil {
		return
	}
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	r.Series = append(r.Series, g.out.res.Series...)
}

// SetMemoryLimit draws the memory limit across the chart of charged
// memory, as it was enforced (a container's also holds its executable's
// page cache, which is charged to it).
func (g *Group) SetMemoryLimit(r *lab.Result, limitMB int) {
	if limitMB <= 0 {
		return
	}
	mb := float64(limitMB)
	label := "memory limit " + lab.FormatMB(mb)
	if g != nil && g.out != nil {
		g.out.mu.Lock()
		e := g.out.enforced / (1 << 20)
		g.out.mu.Unlock()
		if e > mb {
			label += " (+" + lab.FormatMB(e-mb) + " of page cache charged to each container)"
			mb = e
		}
	}
	r.SetLimit(SeriesMemory, mb, label)
}

// Latest is what the last samples saw: the largest RSS of a running
// instance (MiB) and the requests of all instances the servers held.
func (g *Group) Latest() (rssMB, outstanding float64) {
	if g.out == nil {
		return 0, 0
	}
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	for i := range g.out.rss {
		if g.Proc(i) != nil {
			rssMB = max(rssMB, g.out.rss[i])
		}
		outstanding += g.out.held[i]
	}
	return rssMB, outstanding
}

// Connections are the connections each instance has opened to the
// servers so far, as they saw them (nil as for Requests).
func (g *Group) Connections() []float64 {
	if g.out == nil {
		return nil
	}
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	return append([]float64(nil), g.out.conns...)
}

// Requests are the requests the servers have received from each instance
// so far (nil when the cluster does not list its connections).
func (g *Group) Requests() []float64 {
	if g.out == nil {
		return nil
	}
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	return append([]float64(nil), g.out.reqs...)
}

// SetExits sets the clients' exit counters split at the first fault:
// clients.oom_kills and clients.deaths from the first fault on (the
// fault's effect; all of them when no fault ran), and the same before it
// (…_before_fault, which the steady state wants at 0). ooms and deaths
// are the run's totals.
func SetExits(r *lab.Result, tl lab.Timeline, in []lab.Instance, ooms, deaths int) {
	bo, bd := record.ExitsBefore(in, tl.FaultStart())
	r.SetMetric("clients.oom_kills", float64(max(0, ooms-bo)))
	r.SetMetric("clients.deaths", float64(max(0, deaths-bd)))
	r.SetMetric("clients.oom_kills_before_fault", float64(bo))
	r.SetMetric("clients.deaths_before_fault", float64(bd))
}
