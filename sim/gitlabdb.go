package sim

import (
	"fmt"
	"math"
	"sort"
)

// Discovery is how a Rails process treats what its pod's Consul agent
// answers when it looks the replicas up.
type Discovery uint8

const (
	// Discovery2022 is GitLab's load balancer as it ran in April 2022: a
	// lookup error keeps the host list, an empty answer (a SERVFAIL with no
	// records, read as an empty answer) replaces it with an empty one, and
	// a process that boots while its agent is down has no list until its
	// first answered lookup. With no list every read goes to the primary.
	Discovery2022 Discovery = iota
	// DiscoveryLater is the later code: an empty answer keeps the old list,
	// and an empty or failed lookup is retried up to Retries times after a
	// jittered delay. A process that boots with its agent down still has no
	// list.
	DiscoveryLater
)

func (d Discovery) String() string {
	if d == DiscoveryLater {
		return "later (an empty answer keeps the list; retries with jitter)"
	}
	return "2022 (an empty answer empties the list)"
}

// GitLabDB is IL-0206: Pods pods, each with one Consul client agent and
// Procs Rails processes that find the PostgreSQL replicas by a DNS lookup
// at that agent, and one primary.
//
// The agent: idle at BaseMB. While the trigger (the spike) lasts, Lookers
// uncached DNS lookups are in flight at every agent, each holding its own
// decoded copy of the service's health (PerLookupMB, the collector's 2x
// headroom included), so its memory heads for BaseMB + Lookers·PerLookupMB
// at GrowthMBps; the live heap is half the per-lookup part. With a soft
// limit (GOMEMLIMIT, SoftLimitMB > 0) the collector holds the heap at
// max(soft limit, live) at a cost in lookups answered (SoftLimitRate); with
// UseCache the lookups share one cached reply (CacheMB + CachedPerLookupMB
// each). An agent whose memory reaches LimitMB is OOM-killed; the kubelet
// restarts it after Backoff (doubling from Base to Max; reset once an
// incarnation ran 2·Max, as Kubernetes' 10 min for its 5 min cap), it
// listens after RestartLatency, and answers SERVFAIL (no records) until
// it has joined the cluster, SyncTime later.
//
// A process looks up every Interval + U(0, Jitter) s and at boot; its
// reads (ReadRate/s) go to the replicas when it has a list, else to the
// primary. Processes reboot: once each during the rollout window
// (RolloutAt, RolloutFor: a deploy or a scale-up) and, if ProcLifetime > 0,
// as a Poisson process of that mean.
//
// The primary and the replicas are fluid queues updated every Tick: the
// primary has Cores cores and answers PrimaryRate queries/s; a query that
// would wait longer than Timeout is cancelled (an error). Latency is
// M/M/c's (Erlang C) below saturation and the fluid backlog's above; the
// active connections are Little's law's, against PoolSize (the
// misleading signal: connection saturation).
type GitLabDB struct {
	Pods, Procs int

	BaseMB            float64
	PerLookupMB       float64
	GrowthMBps        float64
	LimitMB           float64
	SoftLimitMB       float64 // GOMEMLIMIT; 0 = none
	SoftLimitRate     float64 // share of the lookup rate left when the soft limit binds
	UseCache          bool    // dns_config { use_cache = true }
	CacheMB           float64
	CachedPerLookupMB float64
	AgentRate         float64 // lookups/s an agent answers under the spike

	Backoff        Backoff // Base, Factor 2, Max
	RestartLatency float64 // s from the end of the back-off to DNS listening
	SyncTime       float64 // s of SERVFAIL after that, until joined

	Discovery  Discovery
	Interval   float64
	Jitter     float64
	Retries    int     // DiscoveryLater
	RetryDelay float64 // DiscoveryLater: retries after U(RetryDelay/2, RetryDelay)

	RolloutAt, RolloutFor float64 // every process reboots once in the window (RolloutFor 0: none)
	ProcLifetime          float64 // mean s between reboots of a process; 0 = never

	ReadRate     float64 // reads/s per process
	WriteRate    float64 // queries/s at the primary whatever the lists
	Cores        int
	PrimaryRate  float64 // queries/s the primary answers, all cores
	Replicas     int
	ReplicaRate  float64 // queries/s one replica answers
	PoolSize     float64 // server connections to the primary (pgbouncer)
	QueryTimeout float64 // s a query waits at most

	Lookers             int
	SpikeAt, SpikeFor   float64
	QuickRecovery       float64 // s after the spike under which recovery counts as quick
	Tick, Sample        float64
	Horizon             float64
	Seed                uint64
	RecoveredPrimaryMax float64 // share of reads at the primary under which the site counts as recovered
}

// GitLabDBResult is what a run measured.
type GitLabDBResult struct {
	T            []float64
	AgentsUp     []float64 // share of agents answering
	PrimaryShare []float64 // share of reads at the primary
	Utilisation  []float64 // offered load / capacity at the primary
	P99ms        []float64 // primary query latency p99, ms
	Connections  []float64 // active server connections at the primary
	OOMs         []float64 // OOM kills so far

	Agents, OOMKills, Restarts  int
	MaxKillsPerAgent            int
	DownS                       float64 // summed over agents: dead, in back-off, not joined
	Answered, Empty, Failed     int     // lookups
	PeakMemMB                   float64 // the most an agent's memory reached
	SpikeAnswers                float64 // lookups an agent answered during the spike, mean over agents
	FirstKillS                  float64 // s from the spike's start to the first OOM kill; +Inf if none
	PeakShare, MeanShare        float64 // reads at the primary: peak, mean over the spike
	PeakUtil, PeakP99ms         float64
	PeakConnections             float64
	SaturatedS, PoolSaturatedS  float64
	ToSaturationS               float64 // s from the spike's start to the primary saturating; +Inf if never
	ErrorShare                  float64 // queries cancelled / queries offered at the primary, over the run
	ReplicaUtilMin              float64 // the replicas' lowest utilisation during the spike
	RecoveredS                  float64 // s after the spike until back to normal; +Inf if never
	Events                      uint64
	OfferedPrimary, ErrorsTotal float64
	MaxNoList                   int     // most workers without a replica at once
	ReadP99ms                   float64 // the app's reads while the spike lasts, p99
	SpikeErrorShare             float64 // the app's queries cancelled while the spike lasts
}

type gdbAgent struct {
	up                  bool
	startedAt, killedAt float64
	killAt, restartAt   float64 // tokens: a pending event is live if it matches
	step, kills         int
	spikeUp             float64 // up time during the spike
}

type gdbRun struct {
	m        GitLabDB
	agents   []gdbAgent
	hasList  []bool
	gen      []uint16
	noList   int
	spiking  bool
	backlog  float64
	res      GitLabDBResult
	lastBad  float64
	shareSum float64
	shareN   int
	reads    []gdbReads
	// the app's queries and those cancelled while the spike lasts
	spikeQueries, spikeErrors float64
}

// Run simulates the model.
func (m GitLabDB) Run() GitLabDBResult {
	s := New(m.Seed)
	r := m.newRun()
	n := m.Pods * m.Procs
	for p := range n {
		s.Schedule(s.Uniform(0, m.Interval+m.Jitter), gdbLookup{r}, lookupArg(p, 0, 0))
		if m.RolloutFor > 0 {
			s.At(m.RolloutAt+s.Uniform(0, m.RolloutFor), gdbBoot{r, false}, int64(p))
		}
		if m.ProcLifetime > 0 {
			s.Schedule(s.Exp(m.ProcLifetime), gdbBoot{r, true}, int64(p))
		}
	}
	s.At(m.SpikeAt, gdbSpike{r, true}, 0)
	s.At(m.SpikeAt+m.SpikeFor, gdbSpike{r, false}, 0)
	s.Schedule(0, gdbTick{r}, 0)
	s.Run(m.Horizon)
	return r.finish(s)
}

func (m GitLabDB) newRun() *gdbRun {
	n := m.Pods * m.Procs
	r := &gdbRun{m: m, agents: make([]gdbAgent, m.Pods), hasList: make([]bool, n), gen: make([]uint16, n)}
	for i := range r.agents {
		r.agents[i] = gdbAgent{up: true, startedAt: -1e9, killAt: -1, restartAt: -1}
	}
	for p := range r.hasList {
		r.hasList[p] = true
	}
	r.res.FirstKillS, r.res.ToSaturationS, r.res.ReplicaUtilMin = math.Inf(1), math.Inf(1), math.Inf(1)
	r.lastBad = math.Inf(-1)
	return r
}

// peakMB is where an agent's memory heads under the spike, and whether the
// soft limit binds.
func (m GitLabDB) peakMB() (float64, bool) {
	l := float64(m.Lookers)
	if m.UseCache {
		return m.BaseMB + m.CacheMB + l*m.CachedPerLookupMB, false
	}
	demand := m.BaseMB + l*m.PerLookupMB
	if m.SoftLimitMB <= 0 || demand <= m.SoftLimitMB {
		return demand, false
	}
	live := m.BaseMB + l*m.PerLookupMB/2
	return math.Max(m.SoftLimitMB, live), true
}

// killDelay is how long an agent runs under the spike before the kernel
// kills it; +Inf if its memory stays under the limit.
func (m GitLabDB) killDelay() float64 {
	peak, _ := m.peakMB()
	if peak < m.LimitMB {
		return math.Inf(1)
	}
	return (m.LimitMB - m.BaseMB) / m.GrowthMBps
}

// lookupRate is what an agent answers per second under the spike.
func (m GitLabDB) lookupRate() float64 {
	if _, soft := m.peakMB(); soft {
		return m.AgentRate * m.SoftLimitRate
	}
	return m.AgentRate
}

func lookupArg(p, k int, gen uint16) int64 { return int64(p) | int64(k)<<32 | int64(gen)<<40 }

func splitLookup(arg int64) (p, k int, gen uint16) {
	return int(arg & 0xffffffff), int(arg >> 32 & 0xff), uint16(arg >> 40)
}

type gdbSpike struct {
	r     *gdbRun
	start bool
}

// Handle starts or ends the trigger at every agent.
func (h gdbSpike) Handle(s *Sim, _ int64) {
	r := h.r
	r.spiking = h.start
	for i := range r.agents {
		a := &r.agents[i]
		if !a.up {
			continue
		}
		if h.start {
			r.armKill(s, i)
			continue
		}
		a.killAt = -1
		a.spikeUp += s.Now() - math.Max(a.startedAt, r.m.SpikeAt)
	}
}

// armKill schedules agent i's OOM kill if its memory will reach the limit.
func (r *gdbRun) armKill(s *Sim, i int) {
	peak, _ := r.m.peakMB()
	d := r.m.killDelay()
	if math.IsInf(d, 1) {
		r.res.PeakMemMB = math.Max(r.res.PeakMemMB, peak)
		return
	}
	r.agents[i].killAt = s.Now() + d
	s.Schedule(d, gdbKill{r}, int64(i))
}

type gdbKill struct{ r *gdbRun }

// Handle: the kernel kills the agent; the kubelet restarts it after its
// back-off.
func (h gdbKill) Handle(s *Sim, i int64) {
	r := h.r
	a := &r.agents[i]
	if !a.up || !r.spiking || s.Now() != a.killAt {
		return
	}
	r.res.PeakMemMB = math.Max(r.res.PeakMemMB, r.m.LimitMB)
	if math.IsInf(r.res.FirstKillS, 1) {
		r.res.FirstKillS = s.Now() - r.m.SpikeAt
	}
	if s.Now()-a.startedAt >= 2*r.m.Backoff.Max {
		a.step = 0
	}
	a.spikeUp += s.Now() - math.Max(a.startedAt, r.m.SpikeAt)
	a.up, a.killedAt, a.killAt = false, s.Now(), -1
	a.kills++
	a.step++
	r.res.OOMKills++
	d := r.m.Backoff.Delay(s, a.step) + r.m.RestartLatency
	a.restartAt = s.Now() + d
	s.Schedule(d, gdbRestart{r}, i)
}

type gdbRestart struct{ r *gdbRun }

// Handle: the agent listens again (and joins SyncTime later).
func (h gdbRestart) Handle(s *Sim, i int64) {
	r := h.r
	a := &r.agents[i]
	if a.up || s.Now() != a.restartAt {
		return
	}
	a.up, a.startedAt, a.restartAt = true, s.Now(), -1
	r.res.Restarts++
	r.res.DownS += s.Now() + r.m.SyncTime - a.killedAt
	if r.spiking {
		r.armKill(s, int(i))
	}
}

// Lookup outcomes.
const (
	gdbAnswered = iota
	gdbEmpty
	gdbFailed
)

func (r *gdbRun) ask(now float64, pod int) int {
	a := &r.agents[pod]
	switch {
	case !a.up:
		return gdbFailed
	case now < a.startedAt+r.m.SyncTime:
		return gdbEmpty
	case a.killAt > 0 && now+float64(r.m.Lookers)/r.m.lookupRate() > a.killAt:
		// behind the spike's lookups, the answer would come after the kill
		return gdbFailed
	}
	return gdbAnswered
}

func (r *gdbRun) setList(p int, has bool) {
	if r.hasList[p] == has {
		return
	}
	r.hasList[p] = has
	if has {
		r.noList--
	} else {
		r.noList++
	}
}

type gdbLookup struct{ r *gdbRun }

// Handle: process p looks the replicas up (attempt k: 0 is the scheduled
// one, the rest retries).
func (h gdbLookup) Handle(s *Sim, arg int64) {
	r := h.r
	p, k, gen := splitLookup(arg)
	if gen != r.gen[p] {
		return
	}
	if k == 0 {
		s.Schedule(r.m.Interval+s.Uniform(0, r.m.Jitter), h, lookupArg(p, 0, gen))
	}
	out := r.ask(s.Now(), p/r.m.Procs)
	switch out {
	case gdbAnswered:
		r.res.Answered++
		r.setList(p, true)
		return
	case gdbEmpty:
		r.res.Empty++
	default:
		r.res.Failed++
	}
	if r.m.Discovery == Discovery2022 {
		if out == gdbEmpty {
			r.setList(p, false)
		}
		return
	}
	if k < r.m.Retries {
		s.Schedule(s.Uniform(r.m.RetryDelay/2, r.m.RetryDelay), h, lookupArg(p, k+1, gen))
	}
}

type gdbBoot struct {
	r       *gdbRun
	poisson bool
}

// Handle: process p boots with no list and looks up at once.
func (h gdbBoot) Handle(s *Sim, p int64) {
	r := h.r
	r.gen[p]++
	r.setList(int(p), false)
	gdbLookup{r}.Handle(s, lookupArg(int(p), 0, r.gen[p]))
	if h.poisson {
		s.Schedule(s.Exp(r.m.ProcLifetime), h, p)
	}
}

type gdbTick struct{ r *gdbRun }

// Handle: the databases serve a tick's worth of queries.
func (h gdbTick) Handle(s *Sim, _ int64) {
	r := h.r
	m := r.m
	n := float64(m.Pods * m.Procs)
	f := gdbFigures{share: float64(r.noList) / n}
	lam := m.WriteRate + m.ReadRate*float64(r.noList)
	r.primary(lam, m.Tick, &f)
	f.util = lam / m.PrimaryRate
	f.rep = m.ReadRate * (n - float64(r.noList)) / float64(m.Replicas) / m.ReplicaRate
	r.account(s, f)
	r.accountReads(s, lam, f)
	if int(math.Round(s.Now()/m.Tick))%max(1, int(math.Round(m.Sample/m.Tick))) == 0 {
		r.sample(s, f)
	}
	s.Schedule(m.Tick, h, 0)
}

// gdbFigures are the databases' figures of one tick.
type gdbFigures struct {
	share, util, rep float64
	p99ms, meanMs    float64 // a primary query's latency
	conns            float64 // active connections at the primary
	errors           float64 // primary queries cancelled this tick
}

// primary moves the fluid queue on by dt at offered rate lam.
func (r *gdbRun) primary(lam, dt float64, f *gdbFigures) {
	m := r.m
	mu1 := m.PrimaryRate / float64(m.Cores)
	r.res.OfferedPrimary += lam * dt
	r.backlog += (lam - m.PrimaryRate) * dt
	if lim := m.PrimaryRate * m.QueryTimeout; r.backlog > lim {
		f.errors = r.backlog - lim
		r.res.ErrorsTotal += f.errors
		r.backlog = lim
	}
	r.backlog = math.Max(r.backlog, 0)
	if r.backlog > 0 || lam >= m.PrimaryRate {
		wait := r.backlog / m.PrimaryRate
		f.p99ms, f.meanMs = 1000*(wait+math.Log(100)/mu1), 1000*(wait+1/mu1)
		f.conns = float64(m.Cores) + r.backlog
		return
	}
	a := lam / mu1
	c := erlangC(m.Cores, a)
	wait := 0.0
	if c > 0.01 {
		wait = math.Log(c/0.01) / (float64(m.Cores)*mu1 - lam)
	}
	rho := a / float64(m.Cores)
	f.p99ms = 1000 * (wait + math.Log(100)/mu1)
	f.meanMs = 1000 * (c/(float64(m.Cores)*mu1-lam) + 1/mu1)
	f.conns = a + c*rho/(1-rho)
}

// accountReads keeps, while the spike lasts, the app's reads by latency
// (the primary's mean this tick, or a replica's service time) and its
// queries cancelled.
func (r *gdbRun) accountReads(s *Sim, lam float64, f gdbFigures) {
	m, now := r.m, s.Now()
	if now < m.SpikeAt || now >= m.SpikeAt+m.SpikeFor {
		return
	}
	n := float64(m.Pods * m.Procs)
	atPrimary := m.ReadRate * float64(r.noList) * m.Tick
	r.reads = append(r.reads, gdbReads{f.meanMs, atPrimary}, gdbReads{1000 / m.ReplicaRate, m.ReadRate*n*m.Tick - atPrimary})
	r.spikeQueries += (m.ReadRate*n + m.WriteRate) * m.Tick
	r.spikeErrors += f.errors
}

// gdbReads are reads of one latency.
type gdbReads struct{ ms, n float64 }

// readP99 is the 99th percentile of the reads kept.
func readP99(reads []gdbReads) float64 {
	sort.Slice(reads, func(i, j int) bool { return reads[i].ms < reads[j].ms })
	var total float64
	for _, x := range reads {
		total += x.n
	}
	acc := 0.0
	for _, x := range reads {
		acc += x.n
		if acc >= 0.99*total {
			return x.ms
		}
	}
	return 0
}

// erlangC is the probability that an arrival waits at an M/M/c queue of
// offered load a (in servers).
func erlangC(c int, a float64) float64 {
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	if rho >= 1 {
		return 1
	}
	return b / (1 - rho*(1-b))
}

func (r *gdbRun) account(s *Sim, f gdbFigures) {
	m, now := r.m, s.Now()
	share, util, p99, conns, rep := f.share, f.util, f.p99ms, f.conns, f.rep
	r.res.MaxNoList = max(r.res.MaxNoList, r.noList)
	inSpike := now >= m.SpikeAt && now < m.SpikeAt+m.SpikeFor
	r.res.PeakShare = math.Max(r.res.PeakShare, share)
	r.res.PeakUtil = math.Max(r.res.PeakUtil, util)
	r.res.PeakP99ms = math.Max(r.res.PeakP99ms, p99)
	r.res.PeakConnections = math.Max(r.res.PeakConnections, math.Min(conns, m.PoolSize))
	if util >= 1 {
		r.res.SaturatedS += m.Tick
		if now >= m.SpikeAt {
			r.res.ToSaturationS = math.Min(r.res.ToSaturationS, now-m.SpikeAt)
		}
	}
	if conns >= m.PoolSize {
		r.res.PoolSaturatedS += m.Tick
	}
	if inSpike {
		r.shareSum += share
		r.shareN++
		r.res.ReplicaUtilMin = math.Min(r.res.ReplicaUtilMin, rep)
	}
	if share > m.RecoveredPrimaryMax || r.backlog > 0 || util >= 1 {
		r.lastBad = now
	}
}

func (r *gdbRun) sample(s *Sim, f gdbFigures) {
	share, util, p99, conns := f.share, f.util, f.p99ms, f.conns
	up := 0
	for i := range r.agents {
		if r.agents[i].up && s.Now() >= r.agents[i].startedAt+r.m.SyncTime {
			up++
		}
	}
	res := &r.res
	res.T = append(res.T, s.Now())
	res.AgentsUp = append(res.AgentsUp, float64(up)/float64(len(r.agents)))
	res.PrimaryShare = append(res.PrimaryShare, share)
	res.Utilisation = append(res.Utilisation, util)
	res.P99ms = append(res.P99ms, p99)
	res.Connections = append(res.Connections, math.Min(conns, r.m.PoolSize))
	res.OOMs = append(res.OOMs, float64(res.OOMKills))
}

func (r *gdbRun) finish(s *Sim) GitLabDBResult {
	res := r.res
	m := r.m
	end := m.SpikeAt + m.SpikeFor
	var up float64
	for i := range r.agents {
		a := &r.agents[i]
		res.MaxKillsPerAgent = max(res.MaxKillsPerAgent, a.kills)
		if a.up && r.spiking {
			a.spikeUp += s.Now() - math.Max(a.startedAt, m.SpikeAt)
		}
		up += a.spikeUp
	}
	res.SpikeAnswers = up / float64(len(r.agents)) * m.lookupRate()
	if r.shareN > 0 {
		res.MeanShare = r.shareSum / float64(r.shareN)
	}
	res.ReadP99ms = readP99(r.reads)
	if r.spikeQueries > 0 {
		res.SpikeErrorShare = r.spikeErrors / r.spikeQueries
	}
	if res.OfferedPrimary > 0 {
		res.ErrorShare = res.ErrorsTotal / res.OfferedPrimary
	}
	switch {
	case r.lastBad < end:
		res.RecoveredS = 0
	case r.lastBad >= s.Now()-m.Tick:
		res.RecoveredS = math.Inf(1)
	default:
		res.RecoveredS = r.lastBad + m.Tick - end
	}
	res.Events, res.Agents = s.Events(), len(r.agents)
	return res
}

// Summary summarises a run for reports and sweeps.
func (r GitLabDBResult) Summary(quick float64) Result {
	src := "primary"
	out := Result{
		Series: []Trace{
			{Name: "agents.answering_share", Source: "agents", Unit: "share", T: r.T, V: r.AgentsUp},
			{Name: "reads.primary_share", Source: "app", Unit: "share", T: r.T, V: r.PrimaryShare},
			{Name: "primary.utilisation", Source: src, Unit: "offered/capacity", T: r.T, V: r.Utilisation},
			{Name: "primary.latency_p99_ms", Source: src, Unit: "ms", T: r.T, V: r.P99ms},
			{Name: "primary.connections", Source: src, Unit: "connections", T: r.T, V: r.Connections},
			{Name: "agents.oom_kills", Source: "agents", Unit: "kills", T: r.T, V: r.OOMs},
		},
		Metrics: r.metrics(),
		Events:  r.Events,
	}
	switch {
	case r.RecoveredS <= quick:
		out.Outcome, out.Why = Recovered, fmt.Sprintf("reads back at the replicas and the primary unsaturated %.0f s after the spike (quick: ≤ %.0f s)", r.RecoveredS, quick)
	case !math.IsInf(r.RecoveredS, 1):
		out.Outcome, out.Why = RecoveredSlowly, fmt.Sprintf("reads back at the replicas only %.1f min after the spike", r.RecoveredS/60)
	default:
		out.Outcome, out.Why = StayedDown, "reads still at the primary, or the primary saturated, at the horizon"
	}
	return out
}

func (r GitLabDBResult) metrics() map[string]float64 {
	return map[string]float64{
		"agents.oom_kills":                r.float(r.OOMKills),
		"agents.restarts":                 r.float(r.Restarts),
		"agents.down_s":                   r.DownS,
		"agents.oom_kills_per_agent.max":  r.float(r.MaxKillsPerAgent),
		"agents.oom_kills_per_agent.mean": r.float(r.OOMKills) / r.float(max(1, r.Agents)),
		"agents.memory_peak_mb":           r.PeakMemMB,
		"agents.first_oom_kill_s":         r.FirstKillS,
		"agents.spike_answers":            r.SpikeAnswers,
		"reads.primary_share.peak":        r.PeakShare,
		"reads.primary_share.mean":        r.MeanShare,
		"primary.utilisation.peak":        r.PeakUtil,
		"primary.latency_p99_ms.peak":     r.PeakP99ms,
		"primary.connections.peak":        r.PeakConnections,
		"primary.saturated_s":             r.SaturatedS,
		"primary.pool_saturated_s":        r.PoolSaturatedS,
		"primary.time_to_saturation_s":    r.ToSaturationS,
		"primary.error_share":             r.ErrorShare,
		"replicas.utilisation.min_spike":  r.ReplicaUtilMin,
		"app.recovered_after_spike_s":     r.RecoveredS,
		// the harness scenario's names
		"app.primary_read_share.during_faults": r.MeanShare,
		"app.read_p99_ms.during_faults":        r.ReadP99ms,
		"app.error_rate.during_faults":         r.SpikeErrorShare,
		"app.processes_without_replicas.max":   r.float(r.MaxNoList),
		"pods.lookups_answered":                r.float(r.Answered),
		"pods.lookups_empty":                   r.float(r.Empty),
		"pods.lookups_failed":                  r.float(r.Failed),
		"sim.events":                           r.float(int(r.Events)),
	}
}

func (GitLabDBResult) float(n int) float64 { return float64(n) }
