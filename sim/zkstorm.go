package sim

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// ZKStrategy is how a proxy (re)loads its mirror of the tree.
type ZKStrategy uint8

const (
	// FullRefresh is Curator's TreeCache as IL-0587's proxies ran it: on
	// every reconnect, resumed session or not, ReadsPerZnode reads for every
	// znode, all sent at once into an unbounded queue; reads that fail when
	// the connection drops are re-queued with exponential back-off.
	FullRefresh ZKStrategy = iota
	// Paced is Elastic's TreeWatcher: nothing re-read on a resumed session;
	// on a new session a walk with at most Window reads in flight, cancelled
	// (started afresh) when its session is lost.
	Paced
)

func (st ZKStrategy) String() string {
	if st == Paced {
		return "paced"
	}
	return "full-refresh"
}

// ZKStorm is IL-0587: Proxies clients each mirroring Znodes znodes from a
// 3-server ZooKeeper ensemble, and a stall of the leader's CPU.
//
// A proxy's outstanding reads are counts, not individual requests: every
// Tick each server shares its capacity (ServiceRate) equally among the
// connections that have work (processor sharing, the way ZooKeeper's
// throttled reader interleaves connections), holds at most OutstandingCap of
// that work read (mntr's zk_outstanding_requests; the rest waits in the
// client's outgoing queue) and answers heartbeats after its held work.
// A connection that gets no answer for RecvTimeout is lost; the client
// reconnects to a random server that accepts it and resumes its session if
// it was away less than SessionTimeout (counted from the end of an election
// at the latest). A proxy's memory is BaseMB plus
// PerZnodeKB for every znode of its mirror and PerRequestKB for every read
// it has pending (at the server, in its queue or waiting to be retried);
// past LimitMB it is OOM-killed and, after RestartDelay, starts empty on a
// new session and loads the whole tree again.
//
// The trigger: at FaultAt the leader loses Intensity of its CPU for
// Duration seconds (1 = stopped, like the harness's SIGSTOP). A leader that
// answers nothing for SyncTimeout loses its followers: they close their
// connections and elect a new leader among themselves (ElectionTime); the
// old leader, once it runs again, closes its connections and rejoins as a
// follower (RejoinTime). The same happens when a server's GC thrashes:
// when the reads queued for it exceed ServerQueueLimit (the write-up's
// filled incoming request queues and worse GC pauses) it answers nothing
// until its clients have given up on it.
type ZKStorm struct {
	Proxies       int // K
	Znodes        int // Z, the mirrored tree
	ReadsPerZnode int // requests per znode on a refresh (getData + getChildren: 2)

	ServiceRate    float64 // reads per second one server answers at full CPU
	OutstandingCap int     // reads a server holds read at most (zk_outstanding_requests); 0 = no cap
	// ServerQueueLimit: reads queued for one server past which its GC
	// thrashes and it stops answering; 0 = never.
	ServerQueueLimit float64
	// Throttled: a server holds only the reads it has accepted, as
	// ZooKeeper 3.8 does: once it has more than globalOutstandingLimit in
	// process it stops reading every connection with a request outstanding
	// (ZooKeeperServer.shouldThrottle), so it holds at most OutstandingCap
	// plus about one read a connection, the rest waiting in the clients'
	// queues, and only that counts against ServerQueueLimit. Otherwise
	// every read queued for a server counts (the write-up's "filled the
	// servers' incoming request queues").
	Throttled bool

	SessionTimeout float64 // s
	RecvTimeout    float64 // s without an answer before the client drops the connection; 0 = 2/3 SessionTimeout (go-zookeeper)
	SyncTimeout    float64 // s a stalled leader keeps its followers (syncLimit × tickTime)
	ElectionTime   float64 // s from the followers giving up to a new leader serving
	RejoinTime     float64 // s from the old leader running again to it serving as a follower
	ReconnectDelay float64 // s between connection attempts

	// WriteRate: znode updates per second; every connected proxy with a
	// loaded mirror re-reads each one when its watch fires.
	WriteRate float64
	// FreshWithin: a mirror is fresh when its reads pending are no more
	// than this many seconds of watch re-reads (the harness: staleness
	// under fresh_within).
	FreshWithin float64

	Strategy  ZKStrategy
	Window    int     // paced: reads in flight per proxy
	BaseRTT   float64 // paced: s a read takes when the server is not saturated
	Retries   int     // full-refresh: re-queues of a failed read before it is dropped
	RetryBase float64 // full-refresh: s, Curator's baseSleepTime (sleep = base·(1+rand(2^(k+1))))

	BaseMB       float64 // resident memory of a proxy with an empty mirror and nothing pending
	PerZnodeKB   float64 // memory per mirrored znode
	PerRequestKB float64 // memory per pending read
	LimitMB      float64 // memory at which the proxy is OOM-killed
	Restart      bool    // a killed proxy is restarted (the supervisor)
	RestartDelay float64 // s

	// ColdStart: the proxies start empty, spread evenly over StartSpread
	// (the harness's warm-up); otherwise every proxy is loaded, connected
	// and fresh at t = 0 (a fleet in its steady state).
	ColdStart   bool
	StartSpread float64

	FaultAt   float64 // s
	Duration  float64 // s the leader's CPU is lost
	Intensity float64 // share of the leader's CPU lost (1 = stopped)
	// Relapse: the trigger is not one event but the leader's state, as the
	// write-up's timeline has it (heavy CPU load on the leader from the
	// trigger on, never said to end before the responders "triggered a
	// leader election and stabilised the ensemble"): whichever server leads
	// stalls again (Intensity, Duration) every Relapse seconds until the
	// responders' forced election (ZKLeaderElection). 0: the trigger
	// happens once. The write-up publishes no period; sim/README.md gives
	// how the outcome moves with it.
	Relapse float64

	// QuickRecovery: every mirror fresh within this many seconds of the
	// trigger's end counts as Recovered.
	// Actions are the responders' actions, at their times (sim/cases takes
	// them from the case record's timeline); none: the untreated system.
	Actions []ZKAction

	QuickRecovery float64
	Tick          float64 // s between service rounds
	Sample        float64 // s between samples of the series
	Horizon       float64 // s
	Seed          uint64
}

// ZKActionKind is a responder's action the model can replay.
type ZKActionKind uint8

const (
	// ZKScaleProxies scales the proxy layer up (every proxy's memory
	// limit × Up) and out (Proxies × Out, the new proxies starting empty
	// over Spread seconds, each loading the whole tree).
	ZKScaleProxies ZKActionKind = iota + 1
	// ZKLeaderElection forces a leader election: every server closes its
	// connections, the followers elect a new leader (ElectionTime) and the
	// old leader rejoins as a follower (RejoinTime).
	ZKLeaderElection
)

func (k ZKActionKind) String() string {
	switch k {
	case ZKScaleProxies:
		return "scale the proxies up and out"
	case ZKLeaderElection:
		return "force a leader election"
	}
	return "unknown action"
}

// ZKAction is one responder's action At seconds into the run.
type ZKAction struct {
	At     float64
	Kind   ZKActionKind
	Up     float64 // ZKScaleProxies: factor on the memory limit (≤ 1: unchanged)
	Out    float64 // ZKScaleProxies: factor on the number of proxies (≤ 1: unchanged)
	Spread float64 // ZKScaleProxies: s over which the new proxies start
	// Replace: scaling up replaces every running proxy by a bigger
	// instance, over the same Spread (a new instance starts empty, on a new
	// session); otherwise the running proxies keep their state.
	Replace bool
}

// ZKStormResult is what a run measured.
type ZKStormResult struct {
	T           []float64 // sample times
	Alive       []float64 // proxies running
	Serving     []float64 // proxies running with a complete (possibly stale) mirror: they can route
	Fresh       []float64 // proxies whose mirror is complete and up to date
	Outstanding []float64 // reads held by the servers, summed
	Pending     []float64 // reads pending in the proxies (at the servers, queued, backing off)
	OOMs        []float64 // OOM kills so far

	// PeakOutstanding is the peak over servers of reads held, from FaultAt
	// (servers.outstanding_requests.max_from_fault).
	PeakOutstanding float64
	PeakPending     float64 // most reads pending in one proxy
	// PeakPendingFromFault is PeakPending from FaultAt on
	// (clients.pending.max_from_fault).
	PeakPendingFromFault float64
	// PeakClientHeld is, from FaultAt, the most reads of one proxy a
	// server held after a round (clients.server_outstanding.max_from_fault).
	PeakClientHeld float64
	// ReloadReadsFromFault counts the reads the proxies issued from FaultAt
	// on to (re)load their mirrors: refreshes, walks and retries of failed
	// reads; watch re-reads, the steady traffic, are not counted.
	// ReconnectsFromFault counts the connections they opened.
	ReloadReadsFromFault float64
	ReconnectsFromFault  int
	// ReadsPerZnodePerReconnect is ReloadReadsFromFault per znode per
	// connection opened (clients.requests_per_znode_per_reconnect; the
	// harness, too, leaves out each client's steady rate before the
	// fault, which it measures from the servers' side).
	ReadsPerZnodePerReconnect float64
	OOMKills                  int
	OOMAfterFault             int
	Reconnects                int
	Refreshes                 int // full refreshes or walks started
	Elections                 int
	GCStalls                  int // server GC stalls (queue over ServerQueueLimit)
	Stalls                    int // the trigger's stalls, relapses included
	// FreshAfter is the time from the end of the trigger until every mirror
	// is fresh and stays fresh (+Inf if not by the horizon).
	FreshAfter float64
	// Degraded is the time after FaultAt with fewer than 90% of the proxies
	// serving, Outage the time with fewer than 5% (from the samples).
	Degraded, Outage float64
	// OutageStart is when the first sample with fewer than 5% serving was
	// taken (+Inf if none); FaultAt is the trigger's time.
	OutageStart, FaultAt float64
	// ActedAt is when the first of the responders' actions was taken (+Inf
	// without any). OutageAfterActions is the full outage from then on;
	// RecoveredAfterActions the time from then until at least 90% of the
	// proxies serve and keep serving to the horizon (+Inf if they do not).
	ActedAt, OutageAfterActions, RecoveredAfterActions float64
	// ElectionsAfterActions and GCStallsAfterActions count, from ActedAt
	// on, the elections (the forced one included) and the servers' GC
	// stalls.
	ElectionsAfterActions, GCStallsAfterActions int
	Quick                                       float64
	Events                                      uint64
}

const (
	zkDown uint8 = iota
	zkConnecting
	zkConnected
)

type zkProxy struct {
	state      uint8
	srv        int8
	gen        uint32 // bumped on every change of connection: drops stale events
	inc        uint32 // process incarnation: drops stale retries
	out        float64
	retry      float64 // reads failed, backing off
	retryK     int     // back-off attempt of the retry bucket
	retryArmed bool
	walk       float64 // paced: reads left in the walk
	walking    bool
	loaded     float64 // znodes in the mirror
	incomplete bool    // reads dropped after their retries: the mirror has holes
	lastAnswer float64
	lostAt     float64 // when the connection was lost
	newSession bool    // the next connection starts a new session
}

type zkServer struct {
	cpu       float64 // share of the CPU it has
	serving   bool    // false during an election or a rejoin
	gc        bool    // GC thrashing
	demoted   bool    // lost the leadership while stalled; rejoins once it runs
	demand    float64 // reads queued for it at the start of the round
	held      float64 // reads it holds after the round (zk_outstanding_requests)
	active    int
	share     float64 // per-connection service this tick
	answering bool
}

type zkRun struct {
	m         ZKStorm
	px        []zkProxy
	sv        [3]zkServer
	leader    int
	deadSince float64 // since when the leader answers nothing (-1: it does)
	electing  bool
	res       ZKStormResult
	reads     float64 // reads per full load
	lastStale float64
	faultEnd  float64
	perReq    float64 // MB
	perZnode  float64 // MB
	freshOut  float64 // reads pending a fresh mirror may have
	electedAt float64 // when the last election ended
	cured     bool    // the responders' election ended the trigger's relapses
	lastDown  float64 // last sample, from the first action on, with under 90% serving
}

func (z *zkRun) rate(j int) float64 {
	sv := &z.sv[j]
	if !sv.serving || sv.gc {
		return 0
	}
	return z.m.ServiceRate * sv.cpu
}

// accepts: a server that runs and serves takes new connections.
func (z *zkRun) accepts(j int) bool { return z.rate(j) > 0 }

func (z *zkRun) inflight(p *zkProxy) float64 {
	if z.m.Strategy == Paced && p.walking {
		return p.out + math.Min(float64(z.m.Window), p.walk)
	}
	return p.out
}

func (z *zkRun) pending(p *zkProxy) float64 { return z.inflight(p) + p.retry }

func (z *zkRun) memory(p *zkProxy) float64 {
	return z.m.BaseMB + z.perZnode*p.loaded + z.perReq*z.pending(p)
}

func (z *zkRun) fresh(p *zkProxy) bool {
	return p.state == zkConnected && p.loaded >= float64(z.m.Znodes)-0.5 && p.out <= z.freshOut && p.retry < 0.5 &&
		!p.walking && !p.incomplete
}

// checkMemory kills proxy i if it is over its limit.
func (z *zkRun) checkMemory(s *Sim, i int) bool {
	p := &z.px[i]
	z.res.PeakPending = math.Max(z.res.PeakPending, z.pending(p))
	if s.Now() >= z.m.FaultAt {
		z.res.PeakPendingFromFault = math.Max(z.res.PeakPendingFromFault, z.pending(p))
	}
	if z.memory(p) <= z.m.LimitMB {
		return false
	}
	z.res.OOMKills++
	if s.Now() >= z.m.FaultAt {
		z.res.OOMAfterFault++
	}
	*p = zkProxy{state: zkDown, gen: p.gen + 1, inc: p.inc + 1, srv: -1}
	if z.m.Restart {
		s.Schedule(z.m.RestartDelay, zkStart{z}, z.arg(i))
	}
	return true
}

func (z *zkRun) arg(i int) int64 { return int64(i)<<32 | int64(z.px[i].gen) }

func (z *zkRun) check(arg int64) (int, bool) {
	i := int(arg >> 32)
	return i, uint32(arg) == z.px[i].gen
}

// zkStart: proxy arg starts (or restarts) with an empty mirror.
type zkStart struct{ z *zkRun }

func (h zkStart) Handle(s *Sim, arg int64) {
	z := h.z
	i, ok := z.check(arg)
	if !ok {
		return
	}
	p := &z.px[i]
	*p = zkProxy{state: zkConnecting, gen: p.gen + 1, inc: p.inc + 1, srv: -1, newSession: true, lostAt: s.Now()}
	s.Schedule(0, zkConnect{z}, z.arg(i))
}

// zkConnect: proxy arg tries a random server.
type zkConnect struct{ z *zkRun }

func (h zkConnect) Handle(s *Sim, arg int64) {
	z := h.z
	i, ok := z.check(arg)
	if !ok || z.px[i].state != zkConnecting {
		return
	}
	p := &z.px[i]
	j := s.R.IntN(3)
	if !z.accepts(j) {
		p.gen++
		s.Schedule(z.m.ReconnectDelay*s.Uniform(0.5, 1.5), zkConnect{z}, z.arg(i))
		return
	}
	now := s.Now()
	// Sessions expire on the leader's clock; a new leader gives every
	// session a full timeout again (ZooKeeper's SessionTracker on load).
	newSession := p.newSession || now-math.Max(p.lostAt, z.electedAt) > z.m.SessionTimeout
	p.state, p.srv, p.lastAnswer, p.newSession = zkConnected, int8(j), now, false
	z.res.Reconnects++
	if now >= z.m.FaultAt {
		z.res.ReconnectsFromFault++
	}
	switch z.m.Strategy {
	case FullRefresh:
		// TreeCache: the whole tree again, on top of whatever is pending.
		p.out += z.reads
		p.incomplete = false
		z.res.Refreshes++
		z.reloads(now, z.reads)
	case Paced:
		if newSession {
			p.walk, p.walking = z.reads, true
			z.res.Refreshes++
			z.reloads(now, z.reads)
		}
	}
	z.checkMemory(s, i)
}

// reloads counts n reads issued at now to (re)load a mirror.
func (z *zkRun) reloads(now, n float64) {
	if now >= z.m.FaultAt {
		z.res.ReloadReadsFromFault += n
	}
}

// lose: proxy i's connection is gone; its reads in flight fail.
func (z *zkRun) lose(s *Sim, i int) {
	p := &z.px[i]
	if p.state != zkConnected {
		return
	}
	p.state, p.srv, p.lostAt = zkConnecting, -1, s.Now()
	p.gen++
	if z.m.Strategy == FullRefresh && p.out > 0 {
		if p.retry < 0.5 {
			p.retryK = 0
		}
		p.retry += p.out
		p.out = 0
		if !p.retryArmed {
			p.retryArmed = true
			s.Schedule(z.backoff(s, p.retryK), zkRetry{z}, int64(i)<<32|int64(p.inc))
		}
	}
	s.Schedule(z.m.ReconnectDelay*s.Uniform(0.5, 1.5), zkConnect{z}, z.arg(i))
}

func (z *zkRun) backoff(s *Sim, k int) float64 {
	return z.m.RetryBase * float64(1+s.R.IntN(1<<(k+1)))
}

// zkRetry: proxy arg's failed reads are sent again, or dropped after
// Retries attempts. The event belongs to the process, not the connection.
type zkRetry struct{ z *zkRun }

func (h zkRetry) Handle(s *Sim, arg int64) {
	z := h.z
	i := int(arg >> 32)
	p := &z.px[i]
	if uint32(arg) != p.inc || p.state == zkDown || !p.retryArmed {
		return
	}
	p.retryArmed = false
	if p.retry < 0.5 {
		p.retry = 0
		return
	}
	if p.state == zkConnected {
		p.out += p.retry
		z.reloads(s.Now(), p.retry)
		p.retry = 0
		return
	}
	p.retryK++
	if p.retryK > z.m.Retries {
		p.retry, p.incomplete = 0, true
		return
	}
	p.retryArmed = true
	s.Schedule(z.backoff(s, p.retryK), h, arg)
}

// disconnectAll: server j closes every connection.
func (z *zkRun) disconnectAll(s *Sim, j int) {
	for i := range z.px {
		if z.px[i].state == zkConnected && int(z.px[i].srv) == j {
			z.lose(s, i)
		}
	}
}

type zkFault struct{ z *zkRun }

// Handle: arg 1 starts the trigger on the current leader (and, with
// Relapse, schedules its return), 0 ends it.
func (h zkFault) Handle(s *Sim, arg int64) {
	z := h.z
	if arg == 0 {
		for j := range z.sv {
			z.sv[j].cpu = 1
		}
		return
	}
	if z.cured {
		return
	}
	z.sv[z.leader].cpu = math.Max(0, 1-z.m.Intensity)
	z.res.Stalls++
	s.Schedule(z.m.Duration, h, 0)
	if z.m.Relapse > 0 {
		s.Schedule(z.m.Relapse, h, 1)
	}
}

type zkElected struct{ z *zkRun }

// Handle: the followers have a new leader and serve again.
func (h zkElected) Handle(s *Sim, _ int64) {
	z := h.z
	old := z.leader
	best := -1
	for j := range z.sv {
		if j != old && (best < 0 || z.sv[j].demand < z.sv[best].demand) {
			best = j
		}
	}
	for j := range z.sv {
		if j != old {
			z.sv[j].serving = true
		}
	}
	z.sv[old].demoted = true
	z.leader, z.electing, z.deadSince, z.electedAt = best, false, -1, s.Now()
	z.res.Elections++
	if s.Now() >= z.res.ActedAt {
		z.res.ElectionsAfterActions++
	}
}

// zkAct takes the responders' action m.Actions[arg].
type zkAct struct{ z *zkRun }

func (h zkAct) Handle(s *Sim, arg int64) {
	z := h.z
	a := z.m.Actions[arg]
	switch a.Kind {
	case ZKScaleProxies:
		if a.Up > 1 {
			z.m.LimitMB *= a.Up
		}
		if a.Replace {
			n := len(z.px)
			for i := range n {
				s.Schedule(a.Spread*float64(i)/float64(n), zkReplace{z}, int64(i))
			}
		}
		if a.Out > 1 {
			n, add := len(z.px), int(math.Round(float64(z.m.Proxies)*(a.Out-1)))
			for k := range add {
				z.px = append(z.px, zkProxy{srv: -1})
				s.Schedule(a.Spread*float64(k)/float64(max(add, 1)), zkStart{z}, z.arg(n+k))
			}
		}
	case ZKLeaderElection:
		z.forceElection(s)
		if z.m.Relapse > 0 {
			// The election and the stabilising the write-up reports with
			// it end the trigger: a stall under way ends, none returns.
			z.cured = true
			zkFault{z}.Handle(s, 0)
		}
	}
}

// zkReplace: proxy arg is replaced by a new instance, started empty.
type zkReplace struct{ z *zkRun }

func (h zkReplace) Handle(s *Sim, arg int64) {
	z, i := h.z, int(arg)
	z.px[i].state = zkDown
	zkStart{z}.Handle(s, z.arg(i))
}

// forceElection: every server closes its connections and the followers
// elect a new leader; the old one rejoins as a follower.
func (z *zkRun) forceElection(s *Sim) {
	if z.electing {
		return
	}
	z.electing = true
	for j := range z.sv {
		z.sv[j].serving = false
		z.disconnectAll(s, j)
	}
	s.Schedule(z.m.ElectionTime, zkElected{z}, 0)
}

type zkRejoined struct{ z *zkRun }

func (h zkRejoined) Handle(s *Sim, arg int64) { h.z.sv[arg].serving = true }

// zkTick is a service round: every server shares its capacity among its
// connections, heartbeats are answered or missed, and the figures kept.
type zkTick struct{ z *zkRun }

func (h zkTick) Handle(s *Sim, _ int64) {
	z := h.z
	m := &z.m
	now, dt := s.Now(), m.Tick
	var budget [3]float64
	for j := range z.sv {
		z.sv[j].demand, z.sv[j].active = 0, 0
	}
	watch := m.WriteRate * dt
	for i := range z.px {
		p := &z.px[i]
		if p.state != zkConnected {
			continue
		}
		// Watch events come from a server that runs.
		if watch > 0 && p.loaded > 0 && z.rate(int(p.srv)) > 0 {
			p.out += watch
		}
		sv := &z.sv[p.srv]
		sv.demand += z.inflight(p)
		if z.demand(p, dt) > 0 {
			sv.active++
		}
	}
	for j := range z.sv {
		sv := &z.sv[j]
		wasGC := sv.gc
		sv.gc = m.ServerQueueLimit > 0 && z.accepted(sv) > m.ServerQueueLimit
		if sv.gc && !wasGC {
			z.res.GCStalls++
			if now >= z.res.ActedAt {
				z.res.GCStallsAfterActions++
			}
		}
		budget[j] = z.rate(j) * dt
		sv.share = 0
		if sv.active > 0 {
			sv.share = budget[j] / float64(sv.active)
		}
	}
	// Water-filling in two passes: connections that want less than an
	// equal share get what they want; the rest share what is left.
	var left [3]float64
	var big [3]int
	for i := range z.px {
		p := &z.px[i]
		if p.state != zkConnected {
			continue
		}
		j := int(p.srv)
		d := z.demand(p, dt)
		if d <= 0 {
			continue
		}
		if d <= z.sv[j].share {
			z.serve(p, d)
			left[j] += z.sv[j].share - d
		} else {
			big[j]++
		}
	}
	for i := range z.px {
		p := &z.px[i]
		if p.state != zkConnected {
			continue
		}
		j := int(p.srv)
		if d := z.demand(p, dt); d > z.sv[j].share && big[j] > 0 {
			z.serve(p, math.Min(d, z.sv[j].share+left[j]/float64(big[j])))
		}
	}
	// What is left after the round is held (up to the cap): a heartbeat
	// waits behind it.
	var resid [3]float64
	for i := range z.px {
		if p := &z.px[i]; p.state == zkConnected {
			resid[p.srv] += z.inflight(p)
		}
	}
	recv := z.recv()
	peak := 0.0
	if now >= m.FaultAt {
		for i := range z.px {
			if p := &z.px[i]; p.state == zkConnected && z.rate(int(p.srv)) > 0 {
				held := z.inflight(p)
				if m.OutstandingCap > 0 {
					held = math.Min(held, float64(m.OutstandingCap))
				}
				z.res.PeakClientHeld = math.Max(z.res.PeakClientHeld, held)
			}
		}
	}
	for j := range z.sv {
		sv := &z.sv[j]
		r := z.rate(j)
		sv.held = resid[j]
		if m.OutstandingCap > 0 {
			sv.held = math.Min(sv.held, float64(m.OutstandingCap))
		}
		if r == 0 {
			sv.held = 0 // a stalled server answers no mntr either
		}
		peak = math.Max(peak, sv.held)
		sv.answering = r > 0 && sv.held/r <= recv
	}
	if now >= m.FaultAt {
		z.res.PeakOutstanding = math.Max(z.res.PeakOutstanding, peak)
	}
	// Heartbeats.
	allFresh := true
	for i := range z.px {
		p := &z.px[i]
		if p.state == zkConnected {
			if z.sv[p.srv].answering {
				p.lastAnswer = now
			} else if now-p.lastAnswer > recv {
				z.lose(s, i)
			}
		}
		if !z.fresh(p) {
			allFresh = false
		}
	}
	if !allFresh && now >= z.faultEnd {
		z.lastStale = now
	}
	// The leader: answering nothing for SyncTimeout loses its followers.
	if !z.electing {
		if z.rate(z.leader) > 0 {
			z.deadSince = -1
		} else if z.deadSince < 0 {
			z.deadSince = now
		} else if now-z.deadSince >= m.SyncTimeout {
			z.electing = true
			for j := range z.sv {
				if j != z.leader {
					z.sv[j].serving = false
					z.disconnectAll(s, j)
				}
			}
			s.Schedule(m.ElectionTime, zkElected{z}, 0)
		}
	}
	// A demoted leader that runs again drops its clients and rejoins.
	for j := range z.sv {
		sv := &z.sv[j]
		if sv.demoted && sv.cpu > 0 && !sv.gc {
			sv.demoted, sv.serving = false, false
			z.disconnectAll(s, j)
			s.Schedule(m.RejoinTime, zkRejoined{z}, int64(j))
		}
	}
	s.Schedule(dt, h, 0)
}

// accepted is what server sv holds of the reads queued for it (see
// ZKStorm.Throttled).
func (z *zkRun) accepted(sv *zkServer) float64 {
	if !z.m.Throttled || z.m.OutstandingCap <= 0 {
		return sv.demand
	}
	return math.Min(sv.demand, float64(z.m.OutstandingCap+sv.active))
}

func (z *zkRun) recv() float64 {
	if z.m.RecvTimeout > 0 {
		return z.m.RecvTimeout
	}
	return z.m.SessionTimeout * 2 / 3
}

// demand is what proxy p can have answered this tick.
func (z *zkRun) demand(p *zkProxy, dt float64) float64 {
	if z.m.Strategy == Paced && p.walking {
		return p.out + math.Min(p.walk, float64(z.m.Window)*dt/z.m.BaseRTT)
	}
	return p.out
}

func (z *zkRun) serve(p *zkProxy, n float64) {
	if n <= 0 {
		return
	}
	// Watch re-reads and refresh reads share the connection in
	// proportion; a walk's reads come after the queued ones.
	k := math.Min(n, p.out)
	p.out -= k
	if p.out < 1e-6 {
		p.out = 0
	}
	if rest := n - k; rest > 0 && p.walking {
		p.walk -= rest
		if p.walk < 1e-6 {
			p.walk, p.walking = 0, false
		}
	}
	if lim := float64(z.m.Znodes); p.loaded < lim {
		p.loaded = math.Min(lim, p.loaded+n/float64(z.m.ReadsPerZnode))
	}
}

type zkSample struct{ z *zkRun }

func (h zkSample) Handle(s *Sim, _ int64) {
	z := h.z
	r := &z.res
	var alive, serving, fresh, pend, out float64
	for i := range z.px {
		p := &z.px[i]
		if p.state == zkDown {
			continue
		}
		alive++
		if p.loaded >= float64(z.m.Znodes)-0.5 {
			serving++
		}
		if z.fresh(p) {
			fresh++
		}
		pend += z.pending(p)
	}
	for j := range z.sv {
		out += z.sv[j].held
	}
	now := s.Now()
	r.T = append(r.T, now)
	r.Alive = append(r.Alive, alive)
	r.Serving = append(r.Serving, serving)
	r.Fresh = append(r.Fresh, fresh)
	r.Outstanding = append(r.Outstanding, out)
	r.Pending = append(r.Pending, pend)
	r.OOMs = append(r.OOMs, float64(r.OOMKills))
	if now >= z.m.FaultAt {
		k := float64(len(z.px))
		if serving < 0.9*k {
			r.Degraded += z.m.Sample
		}
		if serving < 0.05*k {
			r.Outage += z.m.Sample
			r.OutageStart = math.Min(r.OutageStart, now)
		}
	}
	if now >= r.ActedAt {
		if serving < 0.05*float64(len(z.px)) {
			r.OutageAfterActions += z.m.Sample
		}
		if serving < 0.9*float64(len(z.px)) {
			z.lastDown = now
		}
	}
	s.Schedule(z.m.Sample, h, 0)
}

// Run simulates the model.
func (m ZKStorm) Run() ZKStormResult {
	s := New(m.Seed)
	if m.ReadsPerZnode < 1 {
		m.ReadsPerZnode = 1
	}
	if m.Window < 1 {
		m.Window = 1
	}
	if m.Tick <= 0 {
		m.Tick = 0.1
	}
	if m.Sample <= 0 {
		m.Sample = 1
	}
	if m.BaseRTT <= 0 {
		m.BaseRTT = 0.001
	}
	z := &zkRun{m: m, px: make([]zkProxy, m.Proxies), deadSince: -1, lastStale: math.Inf(-1),
		reads: float64(m.Znodes * m.ReadsPerZnode), faultEnd: m.FaultAt + m.Duration,
		perReq: m.PerRequestKB / 1024, perZnode: m.PerZnodeKB / 1024, freshOut: 0.5 + m.WriteRate*m.FreshWithin}
	z.res.OutageStart, z.res.FaultAt = math.Inf(1), m.FaultAt
	z.res.Quick = m.QuickRecovery
	for j := range z.sv {
		z.sv[j] = zkServer{cpu: 1, serving: true}
	}
	for i := range z.px {
		z.px[i].srv = -1
		if m.ColdStart {
			at := 0.0
			if m.Proxies > 1 {
				at = m.StartSpread * float64(i) / float64(m.Proxies)
			}
			s.At(at, zkStart{z}, z.arg(i))
			continue
		}
		z.px[i] = zkProxy{state: zkConnected, srv: int8(s.R.IntN(3)), loaded: float64(m.Znodes)}
	}
	s.At(m.FaultAt, zkFault{z}, 1)
	z.res.ActedAt, z.lastDown = math.Inf(1), math.Inf(-1)
	for i, a := range m.Actions {
		z.res.ActedAt = math.Min(z.res.ActedAt, a.At)
		s.At(a.At, zkAct{z}, int64(i))
	}
	s.Schedule(0, zkTick{z}, 0)
	s.Schedule(0, zkSample{z}, 0)
	s.Run(m.Horizon)

	r := z.res
	r.FreshAfter = math.Inf(1)
	allFresh := true
	for i := range z.px {
		allFresh = allFresh && z.fresh(&z.px[i])
	}
	if allFresh {
		r.FreshAfter = math.Max(0, z.lastStale-z.faultEnd)
	}
	r.RecoveredAfterActions = math.Inf(1)
	if !math.IsInf(r.ActedAt, 1) && z.lastDown < m.Horizon-m.Sample {
		r.RecoveredAfterActions = math.Max(0, z.lastDown+m.Sample-r.ActedAt)
	}
	r.ReadsPerZnodePerReconnect = r.ReloadReadsFromFault / float64(z.m.Znodes) / math.Max(float64(r.ReconnectsFromFault), 1)
	r.Events = s.Events()
	return r
}

// WithTrigger returns the model with the trigger set for a metastability
// map: intensity is the share of the leader's CPU lost (1 = the leader
// stopped), duration the seconds it lasts. The observation after the
// trigger keeps its length.
func (m ZKStorm) WithTrigger(intensity, duration float64) ZKStorm {
	after := m.Horizon - m.FaultAt - m.Duration
	m.Intensity, m.Duration = intensity, duration
	m.Horizon = m.FaultAt + duration + after
	return m
}

// Summary summarises the run: Recovered when every mirror is fresh within
// the model's QuickRecovery of the trigger's end.
func (r ZKStormResult) Summary() Result {
	out := Result{
		Series: []Trace{
			{Name: "proxies.alive", Source: "proxies", Unit: "proxies", T: r.T, V: r.Alive},
			{Name: "proxies.serving", Source: "proxies", Unit: "proxies", T: r.T, V: r.Serving},
			{Name: "proxies.fresh", Source: "proxies", Unit: "proxies", T: r.T, V: r.Fresh},
			{Name: "servers.outstanding", Source: "servers", Unit: "requests", T: r.T, V: r.Outstanding},
			{Name: "proxies.pending", Source: "proxies", Unit: "requests", T: r.T, V: r.Pending},
			{Name: "proxies.oom_kills", Source: "proxies", Unit: "kills", T: r.T, V: r.OOMs},
		},
		Metrics: map[string]float64{
			"servers.outstanding_requests.max_from_fault": r.PeakOutstanding,
			"clients.oom_kills":                           float64(r.OOMKills),
			"clients.oom_kills_from_fault":                float64(r.OOMAfterFault),
			"clients.pending.max":                         r.PeakPending,
			"clients.pending.max_from_fault":              r.PeakPendingFromFault,
			"clients.server_outstanding.max_from_fault":   r.PeakClientHeld,
			"clients.requests_per_znode_per_reconnect":    r.ReadsPerZnodePerReconnect,
			"clients.reconnects.total":                    float64(r.Reconnects),
			"clients.refreshes.total":                     float64(r.Refreshes),
			"clients.fresh_after_fault_s":                 r.FreshAfter,
			"proxies.degraded_s":                          r.Degraded,
			"proxies.outage_s":                            r.Outage,
			"servers.elections":                           float64(r.Elections),
			"servers.gc_stalls":                           float64(r.GCStalls),
			"servers.trigger_stalls":                      float64(r.Stalls),
			"sim.events":                                  float64(r.Events),
		},
		Events: r.Events,
	}
	if !math.IsInf(r.OutageStart, 1) {
		out.Metrics["proxies.outage_start_after_trigger_s"] = r.OutageStart - r.FaultAt
	}
	if !math.IsInf(r.ActedAt, 1) {
		out.Metrics["proxies.outage_after_actions_s"] = r.OutageAfterActions
		out.Metrics["proxies.recovered_after_actions_s"] = r.RecoveredAfterActions
		out.Metrics["servers.elections_after_actions"] = float64(r.ElectionsAfterActions)
		out.Metrics["servers.gc_stalls_after_actions"] = float64(r.GCStallsAfterActions)
	}
	switch {
	case r.FreshAfter <= r.Quick:
		out.Outcome, out.Why = Recovered, fmt.Sprintf("every mirror fresh %.0f s after the trigger ended (quick: ≤ %.0f s), %d OOM kills", r.FreshAfter, r.Quick, r.OOMKills)
	case !math.IsInf(r.FreshAfter, 1):
		out.Outcome, out.Why = RecoveredSlowly, fmt.Sprintf("every mirror fresh only %.0f s after the trigger ended, after %d OOM kills", r.FreshAfter, r.OOMKills)
	default:
		out.Outcome, out.Why = StayedDown, fmt.Sprintf("mirrors still not all fresh at the end of the horizon: %d OOM kills, %.1f min with under 5%% of the proxies serving", r.OOMKills, r.Outage/60)
	}
	return out
}

// ZKServerKBPerRead is what one read queued for a server costs it (the
// request, its 1 KiB answer, buffers): our choice, used to turn a server's
// heap into ServerQueueLimit.
const ZKServerKBPerRead = 1.5

// ZKFromReport calibrates the model from a harness report of
// il-0587-zk-treecache-reconnect-storm for one of its variants, at the
// harness's scale. From the scenario: clients, tree size (from the fanout),
// memory limit, session timeout, retries, restart delay, start spread,
// syncLimit × tickTime, the servers' heap, the variant's strategy and
// window, and the fault's time and length. Measured: the servers' service
// rate (the warm-up's initial loads of a full-refresh variant, when the
// servers are saturated), the reads a server holds at most (peak of
// zk_outstanding_requests over that warm-up), memory per pending read (RSS
// at a client's peak of pending reads over its start RSS), base RSS,
// memory per mirrored znode (RSS of a paced client once its walk is done),
// the round trip of a paced read (window over a walking client's rate),
// the election and rejoin times (the servers' state events), and the RSS at
// which the kernel kills (the cgroup limit plus the pages of the
// executable it does not charge: the highest RSS of a variant with OOM
// kills over the limit).
func ZKFromReport(r *reports.Report, variant string) (ZKStorm, error) {
	var m ZKStorm
	if r == nil || r.Scenario == nil {
		return m, errors.New("zk calibration: the report has no scenario")
	}
	v := r.Variant(variant)
	if v == nil {
		var names []string
		for _, x := range r.Variants {
			names = append(names, x.Name)
		}
		return m, fmt.Errorf("zk calibration: no variant %q in the report (has %v)", variant, names)
	}
	w := zkmirror.NewSettings()
	kind, err := v.DecodeWorkload(w)
	if err != nil {
		return m, fmt.Errorf("zk calibration: %w", err)
	}
	topo := &zookeeper.Topology{}
	terr := v.DecodeTopology(topo)
	switch {
	case kind != zkmirror.KindName:
		return m, fmt.Errorf("zk calibration: workload kind %q, want %s", kind, zkmirror.KindName)
	case terr != nil || topo.Servers != 3:
		return m, errors.New("zk calibration: the model is a 3-server ZooKeeper ensemble; the scenario has none")
	case w.Clients < 1:
		return m, errors.New("zk calibration: workload.clients missing")
	case w.Tree.Nodes() < 1:
		return m, errors.New("zk calibration: workload.tree.fanout missing")
	case w.SessionTimeout.D() <= 0:
		return m, errors.New("zk calibration: workload.session_timeout missing")
	case w.MemoryLimitMB <= 0:
		return m, errors.New("zk calibration: workload.memory_limit_mb missing")
	case len(v.Faults) == 0:
		return m, fmt.Errorf("zk calibration: variant %s has no fault window", variant)
	}
	f := v.Faults[0]
	if f.Fault != "pause" {
		return m, fmt.Errorf("zk calibration: fault %q; only pause (the leader stopped) is modelled", f.Fault)
	}
	strategy := FullRefresh
	switch w.Strategy {
	case "full-refresh", "":
	case "paced":
		strategy = Paced
	default:
		return m, fmt.Errorf("zk calibration: unknown strategy %q", w.Strategy)
	}
	first := math.Inf(1)
	for _, e := range v.Events {
		if e.Kind == "client-start" {
			first = math.Min(first, e.T)
		}
	}
	if math.IsInf(first, 1) {
		return m, fmt.Errorf("zk calibration: variant %s has no client-start event", variant)
	}
	tick, sync := topo.TickMS, topo.SyncLimit
	if tick <= 0 {
		tick = 2000
	}
	if sync <= 0 {
		sync = 5
	}
	syncTimeout := float64(tick*sync) / 1000
	election, rejoin := math.NaN(), math.NaN()
	for _, e := range v.Events {
		if e.Kind != "state" {
			continue
		}
		if math.IsNaN(election) && e.Source != f.Member && e.Detail == "now leader" && e.T > f.Start {
			election = math.Max(0.1, e.T-f.Start-syncTimeout)
		}
		if math.IsNaN(rejoin) && e.Source == f.Member && e.Detail == "now follower" && e.T >= f.End {
			rejoin = e.T - f.End
		}
	}
	if math.IsNaN(election) {
		return m, fmt.Errorf("zk calibration: variant %s records no new leader after the fault (state events)", variant)
	}
	if math.IsNaN(rejoin) {
		return m, fmt.Errorf("zk calibration: variant %s records no rejoin of %s as a follower after the fault", variant, f.Member)
	}
	horizon := 0.0
	for _, s := range v.Series {
		for _, p := range s.Points {
			horizon = math.Max(horizon, p.T)
		}
	}

	// Measurements, from whichever variant shows them.
	full, paced := zkVariant(r, "full-refresh"), zkVariant(r, "paced")
	if full == nil {
		return m, errors.New("zk calibration: the report has no full-refresh variant to measure the servers' rate and the memory per read")
	}
	base := zkBaseRSS(v)
	if math.IsNaN(base) {
		return m, fmt.Errorf("zk calibration: variant %s has no client.rss_mb series", variant)
	}
	reads := 2 * w.Tree.Nodes()
	most, rate, perReq, err := zkFullRefreshFigures(full, zkBaseRSS(full))
	if err != nil {
		return m, err
	}
	perZnode := float64(w.Tree.DataBytes) * 1.25 / 1024 // no paced variant: data plus a quarter
	rtt := 0.01
	if paced != nil {
		pz, pr, err := zkPacedFigures(paced, zkBaseRSS(paced), reads)
		if err != nil {
			return m, err
		}
		perZnode, rtt = pz/float64(w.Tree.Nodes()), pr
	} else if strategy == Paced {
		return m, errors.New("zk calibration: no paced variant to measure a paced read's round trip")
	}
	limit := float64(w.MemoryLimitMB)
	if l, ok := v.Limits["client.rss_mb"]; ok && l.Value > limit {
		limit = l.Value // a container's limit also holds its page cache
	}
	offset := 0.0
	for _, x := range r.Variants {
		if float64(x.Metrics["clients.oom_kills"]) > 0 {
			offset = math.Max(offset, float64(x.Metrics["clients.rss_mb.max"])-limit)
		}
	}
	quick := 20.0
	hyps := []verdict.Hypothesis{}
	if r.Spec != nil {
		hyps = r.Spec.Hypotheses
	} else if sc, err := scenarios.OfRecord(r); err == nil {
		hyps = sc.Hypotheses
	}
	for _, h := range hyps {
		if h.Metric == "clients.fresh_after_fault_s" {
			quick = h.Threshold
		}
	}
	heap := topo.HeapMB
	if heap <= 0 {
		heap = 256
	}
	m = ZKStorm{
		Proxies: w.Clients, Znodes: w.Tree.Nodes(), ReadsPerZnode: 2,
		ServiceRate: rate, OutstandingCap: int(most), ServerQueueLimit: float64(heap) * 1024 / ZKServerKBPerRead,
		WriteRate: w.Writer.RatePerSec, FreshWithin: max(w.FreshWithin.D().Seconds(), 2),
		SessionTimeout: w.SessionTimeout.D().Seconds(), SyncTimeout: syncTimeout,
		ElectionTime: election, RejoinTime: rejoin, ReconnectDelay: 1,
		Strategy: strategy, Window: max(w.Window, 1), BaseRTT: rtt, Retries: w.Retries, RetryBase: 1,
		BaseMB: base, PerZnodeKB: perZnode * 1024, PerRequestKB: perReq * 1024, LimitMB: limit + offset,
		Restart: w.Restart, RestartDelay: w.RestartDelay.D().Seconds(),
		ColdStart: true, StartSpread: w.StartSpread.D().Seconds(),
		FaultAt: f.Start - first, Duration: f.End - f.Start, Intensity: 1,
		QuickRecovery: quick, Tick: 0.1, Sample: 1, Horizon: horizon - first, Seed: uint64(max(r.Seed, 0)),
	}
	return m, nil
}

func zkVariant(r *reports.Report, strategy string) *reports.VariantResult {
	for _, v := range r.Variants {
		w := zkmirror.NewSettings()
		if _, err := v.DecodeWorkload(w); err == nil && w.Strategy == strategy {
			return v
		}
	}
	return nil
}

// zkClientSeries returns the named client series by client.
func zkClientSeries(v *reports.VariantResult, name string) map[string][]reports.Point {
	out := map[string][]reports.Point{}
	for _, s := range v.Series {
		if s.Name == name {
			out[s.Source] = s.Points
		}
	}
	return out
}

func zkFinite(p reports.Point) (float64, bool) {
	x := float64(p.V)
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

func zkMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = append([]float64(nil), xs...)
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// zkBaseRSS is the median over clients of their lowest RSS: a process
// just started, nothing loaded.
func zkBaseRSS(v *reports.VariantResult) float64 {
	var lows []float64
	for _, pts := range zkClientSeries(v, "client.rss_mb") {
		low := math.Inf(1)
		for _, p := range pts {
			if x, ok := zkFinite(p); ok && x > 0 {
				low = math.Min(low, x)
			}
		}
		if !math.IsInf(low, 1) {
			lows = append(lows, low)
		}
	}
	return zkMedian(lows)
}

// zkFullRefreshFigures measures, in the warm-up of a full-refresh variant:
// the most reads a server held, the servers' rate (80th percentile of the
// clients' summed completions per second over 5 s windows in which more
// than 1,000 reads were pending, over 3 servers) and the memory per pending
// read (median over clients of the RSS above base at their peak of pending
// reads, per read).
func zkFullRefreshFigures(v *reports.VariantResult, base float64) (most, rate, perReq float64, err error) {
	if len(v.Faults) == 0 {
		return 0, 0, 0, fmt.Errorf("zk calibration: variant %s has no fault window", v.Name)
	}
	end := v.Faults[0].Start
	for _, s := range v.Series {
		if s.Name != "server.outstanding_requests" {
			continue
		}
		for _, p := range s.Points {
			if x, ok := zkFinite(p); ok && p.T < end {
				most = math.Max(most, x)
			}
		}
	}
	if most <= 0 {
		return 0, 0, 0, fmt.Errorf("zk calibration: variant %s has no server.outstanding_requests in its warm-up", v.Name)
	}
	completed, pending, rss := zkClientSeries(v, "client.completed"), zkClientSeries(v, "client.pending"), zkClientSeries(v, "client.rss_mb")
	if len(completed) == 0 || len(pending) == 0 || len(rss) == 0 {
		return 0, 0, 0, fmt.Errorf("zk calibration: variant %s lacks client.completed, client.pending or client.rss_mb", v.Name)
	}
	at := func(pts []reports.Point, t float64) float64 {
		i := sort.Search(len(pts), func(i int) bool { return pts[i].T > t })
		if i == 0 {
			return 0
		}
		x, _ := zkFinite(pts[i-1])
		return x
	}
	start := math.Inf(1)
	for _, pts := range completed {
		if len(pts) > 0 {
			start = math.Min(start, pts[0].T)
		}
	}
	var rates []float64
	for t := start; t+5 < end; t++ {
		var done, pend float64
		for c, pts := range completed {
			done += at(pts, t+5) - at(pts, t)
			pend += at(pending[c], t)
		}
		if pend > 1000 {
			rates = append(rates, done/5/3)
		}
	}
	if len(rates) == 0 {
		return 0, 0, 0, fmt.Errorf("zk calibration: variant %s never had more than 1,000 reads pending in its warm-up", v.Name)
	}
	sort.Float64s(rates)
	rate = rates[len(rates)*4/5]
	var per []float64
	for c, pts := range pending {
		best, bi := 0.0, -1
		for i, p := range pts {
			if x, ok := zkFinite(p); ok && x > best {
				best, bi = x, i
			}
		}
		if best >= 1000 && bi < len(rss[c]) {
			if x, ok := zkFinite(rss[c][bi]); ok {
				per = append(per, (x-base)/best)
			}
		}
	}
	if len(per) == 0 {
		return 0, 0, 0, fmt.Errorf("zk calibration: no client of variant %s had 1,000 reads pending to measure memory per read", v.Name)
	}
	return most, rate, zkMedian(per), nil
}

// zkPacedFigures measures in a paced variant: the memory of a loaded
// mirror (median RSS above base once a client's walk has done all its
// reads, MB; the walk may end after the fault, which does not change the
// mirror) and, before the fault, a paced read's round trip (window over the
// median rate of a walking client).
func zkPacedFigures(v *reports.VariantResult, base float64, reads int) (mirrorMB, rtt float64, err error) {
	if len(v.Faults) == 0 {
		return 0, 0, fmt.Errorf("zk calibration: variant %s has no fault window", v.Name)
	}
	end := v.Faults[0].Start
	w := zkmirror.NewSettings()
	if _, err := v.DecodeWorkload(w); err != nil {
		return 0, 0, fmt.Errorf("zk calibration: %w", err)
	}
	window := float64(max(w.Window, 1))
	completed, pending, rss := zkClientSeries(v, "client.completed"), zkClientSeries(v, "client.pending"), zkClientSeries(v, "client.rss_mb")
	var mirrors, rates []float64
	for c, pts := range completed {
		var t0, c0, t1, c1 float64
		started := false
		for i, p := range pts {
			if i >= len(pending[c]) {
				break
			}
			x, _ := zkFinite(p)
			pend, _ := zkFinite(pending[c][i])
			if pend >= window/2 && p.T < end {
				if !started {
					t0, c0, started = p.T, x, true
				}
				t1, c1 = p.T, x
			}
			if x >= float64(reads) && pend == 0 && i < len(rss[c]) {
				if y, ok := zkFinite(rss[c][i]); ok {
					mirrors = append(mirrors, y-base)
				}
				break
			}
		}
		if started && t1 > t0 && c1 > c0 {
			rates = append(rates, (c1-c0)/(t1-t0))
		}
	}
	if len(rates) == 0 {
		return 0, 0, fmt.Errorf("zk calibration: no walking client in variant %s before the fault", v.Name)
	}
	if len(mirrors) == 0 {
		return 0, 0, fmt.Errorf("zk calibration: no client of variant %s finished its walk, so no loaded mirror to weigh", v.Name)
	}
	return zkMedian(mirrors), window / zkMedian(rates), nil
}

// IncidentZK is IL-0587 at the incident's scale. The write-up gives the
// 3-server ensemble, "tens of thousands of znodes" per mirrored tree, one
// request batch per reconnect, the OOM kills and the timeline (09:09 the
// leader's CPU, 12:42-13:02 full outage, 13:03 back: 3 h 54 min), and is
// silent on the rest, which we choose:
//   - 2,000 proxies ("thousands", the brief's scale), 20,000 znodes, two
//     reads a znode (TreeCache's getData and getChildren, as the harness);
//   - 20,000 reads/s per server, at most 1,000 held (ZooKeeper's default
//     globalOutstandingLimit), GC thrash past 5.6 million queued reads
//     (an 8 GiB heap at ZKServerKBPerRead);
//   - a 30 s session (as the harness; Curator's default is 60 s), syncLimit
//     × tickTime 10 s (zoo.cfg defaults), election 3 s and rejoin 5 s (the
//     harness measured 2.6-3.6 s and 4.2-5.3 s);
//   - a JVM proxy of 300 MB base, 2 KiB per mirrored znode (the harness's
//     Go client: 2.6 KiB) and 2 KiB per pending read (a Curator background
//     read with its 1 KiB answer; the Go client pays 5.5 KiB with its
//     goroutine), killed at 450 MB: a loaded proxy survives one refresh
//     (417 MB) and not two stacked ones (495 MB), the write-up's "a
//     reconnect during a refresh sends the whole batch again";
//   - a restart 30 s after a kill (a supervisor);
//   - 2 znode updates a second (deployments changing), each re-read by
//     every proxy through its watch;
//   - the trigger: the leader stopped (intensity 1) for 15 s after 10 min
//     of steady state, as the harness replays it (the write-up says only
//     "high CPU ... caused client disconnections").
//
// The incident's own point, WithTrigger(1, 15), stays down: the followers
// give up on the stalled leader after 10 s and close every connection, all
// 2,000 proxies refresh at once (80 million reads), the queues put every
// server into GC thrash, stalled leaders cost more elections, and the
// proxies that reconnect with stacked batches are OOM-killed and reload
// from scratch, over and over. A stall under syncLimit × tickTime (or a
// leader that keeps some CPU) disconnects nobody and the fleet recovers;
// the paced strategy recovers from the same stall in seconds.
func IncidentZK() ZKStorm {
	return ZKStorm{
		Proxies: 2000, Znodes: 20000, ReadsPerZnode: 2,
		ServiceRate: 20000, OutstandingCap: 1000, ServerQueueLimit: 8 * 1024 * 1024 / ZKServerKBPerRead,
		SessionTimeout: 30, SyncTimeout: 10, ElectionTime: 3, RejoinTime: 5, ReconnectDelay: 1,
		WriteRate: 2, FreshWithin: 3,
		Strategy: FullRefresh, Window: 8, BaseRTT: 0.005, Retries: 3, RetryBase: 1,
		BaseMB: 300, PerZnodeKB: 2, PerRequestKB: 2, LimitMB: 450,
		Restart: true, RestartDelay: 30,
		FaultAt: 600, Duration: 15, Intensity: 1,
		QuickRecovery: 600, Tick: 0.5, Sample: 10, Horizon: 600 + 5*3600, Seed: 1,
	}
}
