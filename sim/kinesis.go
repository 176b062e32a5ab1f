package sim

import "math"

// Kinesis is the IL-0384 front-end fleet at the incident's scale: S servers
// with a thread per peer (or a fixed pool) against an OS thread limit, new
// members learned over a spread of up to an hour, a capacity addition, and
// the operator's restart at R servers per hour, where building a shard-map
// competes with serving and a health check removes servers that are slow.
//
// Each server is a single CPU shared first-come first-served by its work: a
// fraction Load of it goes to serving requests; shard-map work (decoding a
// peer's map, encoding its own for a peer that asks) queues behind what is
// already there. A health check waits behind that queue too, so a server
// with more than HealthTimeout of work pending fails it, and one whose
// shard-map is still incomplete HealthGrace after its start fails it as
// well; HealthFailures failures in a row remove it (it goes back in the
// restart queue).
type Kinesis struct {
	Servers        int     // S before the addition
	Added          int     // servers the addition brings
	ThreadLimit    int     // L
	BaseThreads    int     // threads a server needs besides its peer threads
	PerPeer        bool    // one thread per peer (the incident); else PoolThreads
	PoolThreads    int     // threads of the pool
	CellSize       int     // 0: one cell
	FromStore      bool    // bootstrap from the store: peers send digests only
	LearnSpread    float64 // s: a new member is learned within this
	DecodeCost     float64 // CPU s to take in one peer's full shard-map
	EncodeCost     float64 // CPU s to send one's shard-map to a peer
	DigestCost     float64 // CPU s per peer when only digests are exchanged
	StoreCost      float64 // CPU s to read the table from the store
	Load           float64 // share of a server's CPU taken by serving (0..1)
	HealthEvery    float64 // s between health checks
	HealthTimeout  float64
	HealthGrace    float64
	HealthFailures int
	// LeaseTTL: a removed server stays a member this long, and its peers'
	// shard-maps are incomplete until it is gone (the harness's lease).
	LeaseTTL    float64
	AddSpan     float64 // s over which the added servers start (02:44-03:47: 63 min)
	AddAt       float64 // s: the capacity addition
	RemoveAt    float64 // s: its removal
	RestartAt   float64 // s: the operator's restart begins
	RestartRate float64 // servers per second; 0 = all at once
	Horizon     float64 // s
	Sample      float64 // s between samples of the series
	Seed        uint64
}

// KinesisResult is what a run measured.
type KinesisResult struct {
	T          []float64 // sample times
	Routing    []float64 // share of the original servers routing
	MaxThreads int
	OverLimit  int // servers that went over the thread limit
	Removals   int // by the health check
	// Recovered is when every original server routes again for good after
	// RestartAt (seconds after RestartAt; +Inf if never in the horizon).
	Recovered float64
	Events    uint64
}

const (
	ksDown uint8 = iota
	ksBuilding
	ksReady
	ksBroken // over the thread limit: alive, but the shard-map never completes
)

type ksServer struct {
	state   uint8
	inc     int32 // incarnation, to drop stale events
	threads int
	peers   int     // peers known
	busy    float64 // time its queued work drains
	started float64
	doneAt  float64 // when the shard-map is built
	fails   int
	queued  bool
	added   bool
	retired bool
	seen    float64 // the cell's work already added to busy
}

type ksCell struct {
	work    float64 // CPU s each live member owes to maps of peers that became ready (cumulative)
	blocked float64 // members' shard-maps incomplete until then (a removed peer still a member)
	live    int     // members building or ready
	ready   int     // members ready
	members int     // members (not retired), up or down
}

type ksRun struct {
	cells    []ksCell
	m        Kinesis
	sv       []ksServer
	res      KinesisResult
	queue    []int32 // restart queue
	nextFree float64
	ready    int // original servers ready
	lastAll  float64
}

func (k *ksRun) cell(i int) int {
	if k.m.CellSize <= 0 {
		return 0
	}
	return i / k.m.CellSize
}

// work queues w CPU seconds on server i, after whatever its cell has
// handed it since it last looked, and returns when it completes.
func (k *ksRun) work(s *Sim, i int, w float64) float64 {
	sv := &k.sv[i]
	c := &k.cells[k.cell(i)]
	w += c.work - sv.seen
	sv.seen = c.work
	free := math.Max(1-k.m.Load, 0.01)
	sv.busy = math.Max(s.Now(), sv.busy) + w/free
	return sv.busy
}

func (k *ksRun) live(st uint8) bool { return st == ksReady || st == ksBuilding }

func (k *ksRun) threadsFor(peers int) int {
	if k.m.PerPeer {
		return k.m.BaseThreads + peers
	}
	return k.m.BaseThreads + k.m.PoolThreads
}

func (k *ksRun) setState(i int, st uint8) {
	sv := &k.sv[i]
	c := &k.cells[k.cell(i)]
	if k.live(sv.state) {
		c.live--
	}
	if sv.state == ksReady {
		c.ready--
	}
	if st == ksReady {
		c.ready++
	}
	if k.live(st) {
		c.live++
		if !k.live(sv.state) {
			sv.seen = c.work // a newcomer owes nothing for earlier maps
		}
	}
	if !sv.added {
		if sv.state == ksReady {
			k.ready--
		}
		if st == ksReady {
			k.ready++
		}
	}
	sv.state = st
}

// start brings server i up: it learns every live member of its cell at
// once and builds its shard-map from its ready peers (or the store).
func (k *ksRun) start(s *Sim, i int) {
	sv := &k.sv[i]
	c := &k.cells[k.cell(i)]
	sv.started, sv.fails, sv.busy, sv.queued = s.Now(), 0, s.Now(), false
	peers, ready := c.members-1, c.ready
	sv.peers, sv.threads = peers, k.threadsFor(peers)
	k.res.MaxThreads = max(k.res.MaxThreads, sv.threads)
	if sv.threads > k.m.ThreadLimit {
		k.setState(i, ksBroken)
		k.res.OverLimit++
		return
	}
	k.setState(i, ksBuilding)
	// Its ready peers each send their map (or a digest): they owe the
	// sending, it owes the taking in.
	own := float64(ready) * k.m.DecodeCost
	if k.m.FromStore {
		c.work += k.m.DigestCost
		own = float64(ready)*k.m.DigestCost + k.m.StoreCost
	} else {
		c.work += k.m.EncodeCost
		if ready == 0 {
			own = k.m.StoreCost
		}
	}
	sv.seen = c.work
	sv.doneAt = k.work(s, i, own)
	k.scheduleBuilt(s, i)
}

func (k *ksRun) scheduleBuilt(s *Sim, i int) {
	sv := &k.sv[i]
	sv.inc++
	s.At(sv.doneAt, ksBuilt{k}, int64(i)<<24|int64(sv.inc&0xffffff))
}

type ksBuilt struct{ k *ksRun }

// Handle: server i's shard-map is built (unless maps of peers that became
// ready meanwhile still have to be taken in: then later); it routes, and
// every live member of its cell owes the decoding of its map.
func (h ksBuilt) Handle(s *Sim, arg int64) {
	k := h.k
	i, inc := int(arg>>24), int32(arg&0xffffff)
	sv := &k.sv[i]
	if sv.inc&0xffffff != inc || sv.state != ksBuilding {
		return
	}
	c := &k.cells[k.cell(i)]
	if c.work > sv.seen {
		sv.doneAt = k.work(s, i, 0)
		k.scheduleBuilt(s, i)
		return
	}
	k.setState(i, ksReady)
	give, take := k.m.EncodeCost, k.m.DecodeCost
	if k.m.FromStore {
		give, take = k.m.DigestCost, k.m.DigestCost
	}
	k.work(s, i, give*float64(c.live-1))
	c.work += take
	sv.seen = c.work // not its own map
}

// learn: server i learns of a new member (one more peer, one more thread).
type ksLearn struct{ k *ksRun }

func (h ksLearn) Handle(s *Sim, arg int64) {
	k := h.k
	i := int(arg)
	sv := &k.sv[i]
	if sv.retired || sv.state == ksDown {
		return
	}
	sv.peers++
	sv.threads = k.threadsFor(sv.peers)
	k.res.MaxThreads = max(k.res.MaxThreads, sv.threads)
	if sv.threads > k.m.ThreadLimit && sv.state != ksBroken {
		k.setState(i, ksBroken)
		k.res.OverLimit++
	}
}

type ksAdd struct{ k *ksRun }

func (h ksAdd) Handle(s *Sim, _ int64) {
	k := h.k
	first := len(k.sv)
	for range k.m.Added {
		k.sv = append(k.sv, ksServer{added: true})
	}
	for i := first; i < len(k.sv); i++ {
		k.cells[k.cell(i)].members++
	}
	for i := first; i < len(k.sv); i++ {
		s.Schedule(s.Uniform(0, k.m.AddSpan), ksJoin{k}, int64(i))
	}
}

type ksJoin struct{ k *ksRun }

// Handle: added server i starts; every original member of its cell will
// learn of it within LearnSpread.
func (h ksJoin) Handle(s *Sim, arg int64) {
	k := h.k
	i := int(arg)
	if k.sv[i].retired {
		return
	}
	k.start(s, i)
	for j := 0; j < k.m.Servers; j++ {
		if k.cell(j) == k.cell(i) {
			s.Schedule(s.Uniform(0, k.m.LearnSpread), ksLearn{k}, int64(j))
		}
	}
}

type ksRemove struct{ k *ksRun }

func (h ksRemove) Handle(s *Sim, _ int64) {
	k := h.k
	for i := range k.sv {
		if k.sv[i].added && !k.sv[i].retired {
			k.setState(i, ksDown)
			k.sv[i].retired = true
			k.cells[k.cell(i)].members--
		}
	}
}

// restart: the operator stops every original server and queues it.
type ksRestart struct{ k *ksRun }

func (h ksRestart) Handle(s *Sim, _ int64) {
	k := h.k
	for i := range k.sv {
		if k.sv[i].retired {
			continue
		}
		k.setState(i, ksDown)
		k.enqueue(i)
	}
	k.nextFree = s.Now()
	k.lastAll = -1 // a fleet back before the next health check counts from then
	s.Schedule(0, ksRestarter{k}, 0)
}

func (k *ksRun) enqueue(i int) {
	if !k.sv[i].queued {
		k.sv[i].queued = true
		k.queue = append(k.queue, int32(i))
	}
}

type ksRestarter struct{ k *ksRun }

// Handle starts the next queued server, paced at RestartRate.
func (h ksRestarter) Handle(s *Sim, _ int64) {
	k := h.k
	for len(k.queue) > 0 {
		i := int(k.queue[0])
		k.queue = k.queue[1:]
		k.start(s, i)
		if k.m.RestartRate > 0 {
			s.Schedule(1/k.m.RestartRate, h, 0)
			return
		}
	}
	// Idle: look again a little later (removed servers come back).
	s.Schedule(math.Max(k.m.HealthEvery, 1), h, 0)
}

type ksHealth struct{ k *ksRun }

// Handle checks every live server and samples the fleet.
func (h ksHealth) Handle(s *Sim, _ int64) {
	k := h.k
	now := s.Now()
	for i := range k.sv {
		sv := &k.sv[i]
		if sv.retired || sv.state == ksDown {
			continue
		}
		// A server still building within its grace period is not judged
		// slow: the load balancer gives a starting server that long.
		inGrace := sv.state != ksReady && now-sv.started <= k.m.HealthGrace
		slow := k.work(s, i, 0)-now > k.m.HealthTimeout && !inGrace
		late := (sv.state != ksReady || now < k.cells[k.cell(i)].blocked) && !inGrace
		if slow || late {
			sv.fails++
		} else {
			sv.fails = 0
		}
		if sv.fails >= k.m.HealthFailures {
			k.res.Removals++
			wasReady := sv.state == ksReady
			k.setState(i, ksDown)
			sv.fails = 0
			// Until its lease runs out, the peers that took in its map
			// wait for it in vain.
			if k.m.LeaseTTL > 0 && wasReady {
				c := &k.cells[k.cell(i)]
				c.blocked = math.Max(c.blocked, now+k.m.LeaseTTL)
			}
			if now >= k.m.RestartAt {
				k.enqueue(i)
			}
		}
	}
	if k.ready == k.m.Servers {
		if k.lastAll < 0 {
			k.lastAll = now
		}
	} else {
		k.lastAll = -1
	}
	s.Schedule(k.m.HealthEvery, h, 0)
}

type ksSample struct{ k *ksRun }

func (h ksSample) Handle(s *Sim, _ int64) {
	k := h.k
	k.res.T = append(k.res.T, s.Now())
	k.res.Routing = append(k.res.Routing, float64(k.ready)/float64(k.m.Servers))
	s.Schedule(k.m.Sample, h, 0)
}

// Run simulates the fleet: a slow cold start first (one server per
// second of the warm-up, peers learned at once), then the timeline.
func (m Kinesis) Run() KinesisResult {
	s := New(m.Seed)
	k := &ksRun{m: m, sv: make([]ksServer, m.Servers), lastAll: -1}
	nc := 1
	if m.CellSize > 0 {
		nc = (m.Servers+m.Added)/m.CellSize + 2
	}
	k.cells = make([]ksCell, nc)
	// The fleet as it ran before the incident: every server up, built, and
	// knowing every peer of its cell.
	for i := range k.sv {
		peers := m.Servers - 1
		if m.CellSize > 0 {
			peers = min(m.CellSize, m.Servers-i/m.CellSize*m.CellSize) - 1
		}
		k.cells[k.cell(i)].members++
		k.sv[i].peers, k.sv[i].threads = peers, k.threadsFor(peers)
		k.res.MaxThreads = max(k.res.MaxThreads, k.sv[i].threads)
		k.setState(i, ksReady)
	}
	s.At(m.AddAt, ksAdd{k}, 0)
	s.At(m.RemoveAt, ksRemove{k}, 0)
	s.At(m.RestartAt, ksRestart{k}, 0)
	s.Schedule(m.HealthEvery, ksHealth{k}, 0)
	s.Schedule(0, ksSample{k}, 0)
	s.Run(m.Horizon)
	k.res.Recovered = math.Inf(1)
	if k.lastAll >= m.RestartAt {
		k.res.Recovered = k.lastAll - m.RestartAt
	}
	k.res.Events = s.Events()
	return k.res
}

// IncidentKinesis is IL-0384 at its own scale: a fleet of "many thousands"
// (3,600: what a few hundred servers an hour need for the 12 h 16 min from
// the first restarted servers to full recovery), 10% added over the learning
// hour, a thread limit between the fleet's old and new needs, and the
// restart from 7 h 23 min after the addition (02:44 to 10:07 PST).
func IncidentKinesis() Kinesis {
	return Kinesis{
		Servers: 3600, Added: 360, ThreadLimit: 50 + 3599 + 180, BaseThreads: 50, PerPeer: true,
		LearnSpread: 3600, DecodeCost: 0.005, EncodeCost: 0.002, DigestCost: 0.00005, StoreCost: 0.05,
		Load: 0.5, HealthEvery: 10, HealthTimeout: 5, HealthGrace: 120, HealthFailures: 3, LeaseTTL: 40,
		AddAt: 0, AddSpan: 63 * 60, RemoveAt: 3 * 3600, RestartAt: 26580, RestartRate: 300.0 / 3600,
		Horizon: 26580 + 16*3600, Sample: 60, Seed: 1,
	}
}
