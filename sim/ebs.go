package sim

import (
	"fmt"
	"math"
)

// EBS is the April 2011 EBS re-mirroring storm in one US East Availability
// Zone (case record seeds/aws-ebs-2011.yaml and the write-up it links),
// with the regional control plane it took down with it.
//
// The zone is Nodes storage nodes of Slots replica slots each, holding
// Volumes volumes of two replicas on two different nodes; what is left is
// the zone's spare capacity. The trigger cuts Intensity of the nodes off
// from every peer (the mistaken traffic shift onto the small replication
// network, which left them "completely isolated from each other") for
// CutDuration seconds from t = 0. A volume with a replica on a cut-off node
// notices its partner is gone when it next replicates a write (after an
// exponential time of mean NoticeMean; a volume that has not noticed by the
// time the network is back never does). It is then blocked ("stuck") until
// its surviving replica, the searcher, has found a free slot for a new
// replica on a reachable node; the old replica keeps its slot (a stale copy)
// until the cluster and the control plane have agreed to drop it.
//
// Each node searches for all the volumes it re-mirrors in rounds: a round
// asks the control plane (one negotiation call, holding a thread
// NegotiatePer per volume in it) and then takes free slots while there are
// any; what is left waits for the next round after Retry's delay (the
// incident: a short, constant delay, "did not back off aggressively
// enough"). A round that closes n replication requests without success
// crashes the node with probability 1-(1-RaceProb)^n (the race condition);
// a crashed node's volumes need re-mirroring from their other replica, and
// volumes it was the only live replica of are lost until restored from
// snapshots.
//
// The control plane is one regional pool of Threads threads shared by
// Zones zones (zone 0 the degraded one). A call that finds the pool (or its
// zone's share, ZoneCap) full fails at once. The other zones each send
// OtherRate calls/s that hold a thread ServiceTime; zone 0 sends CreateRate
// create-volume calls/s that hold a thread ServiceTime, or CreateTimeout when
// the zone's free share is under CreateMinFree (the cluster cannot create
// the volume and the caller waits out the long timeout).
//
// The operators' actions happen when Operators is set and their time is
// positive; times are seconds after the network change.
type EBS struct {
	Nodes   int // storage nodes in the zone
	Slots   int // replica slots per node
	Volumes int // volumes (two replicas each)
	// Ring places the replicas as the harness does: node k holds the
	// primaries of Volumes/Nodes volumes, mirrored on node k+1; otherwise
	// the replicas are spread at random, two nodes a volume.
	Ring bool

	Intensity   float64 // share of the zone's nodes cut off
	CutDuration float64 // s the cut lasts
	NoticeMean  float64 // s: mean time for a volume to notice its lost partner

	Retry    Backoff // delay between a node's search rounds (attempt k)
	RaceProb float64 // per request closed without success in a round

	// The control plane.
	Zones         int     // zones sharing the pool (zone 0 is degraded)
	Threads       int     // regional thread pool
	ZoneCap       int     // most threads one zone may hold; 0: no cap
	ServiceTime   float64 // s a normal call holds a thread
	OtherRate     float64 // calls/s from each other zone
	CreateRate    float64 // create-volume calls/s from zone 0
	CreateTimeout float64 // s a create-volume call holds a thread when the cluster is full
	CreateMinFree float64 // free share under which the cluster cannot create volumes
	CreateNodes   int     // if > 0: a volume is created with a free slot on this many nodes (replaces CreateMinFree)
	NegotiatePer  float64 // s of thread per volume in a negotiation call
	// ReclaimMean: mean s before a stale replica's slot is freed, which
	// takes one control-plane call (retried after as long again if it
	// fails or the cluster is cut off from the control plane); 0: never.
	ReclaimMean float64
	// QueueWait: s a call waits in line (FIFO, per pool: the region's, or
	// each zone's when ZoneCap is set) for a thread before it fails; 0: a
	// call that finds no thread fails at once (the incident scale).
	QueueWait float64
	// SLO: an other zone's call succeeds when it is answered within this
	// many s of its arrival (waiting and service); 0: when it gets a thread.
	SLO float64
	// SpaceWait: s a search call holds its thread waiting for space when
	// it finds none (the harness's control plane polls until its request
	// timeout); 0: the call holds NegotiatePer a volume, space or not.
	SpaceWait float64

	// The operators' actions (s after the change; <= 0: not taken).
	Operators     bool
	CreateOffAt   float64 // create-volume disabled in zone 0
	CutCPAt       float64 // cluster cut off from the control plane
	ContainAt     float64 // nodes stop contacting peers in vain
	ContainedPoll float64 // s between checks for free space once contained
	AddCapacityAt float64 // new nodes start arriving
	AddNodes      int     // nodes added (Slots each)
	AddSpan       float64 // s over which they arrive
	ReopenAt      float64 // control-plane access reopened, node by node
	ReopenSpan    float64 // s the gradual reopening takes
	RestoreAt     float64 // lost volumes restored from snapshots
	RestoreSpan   float64 // s the restores take

	StuckBound float64 // share of volumes stuck counted as "back to normal"
	Quick      float64 // s after the cut ends within which recovery counts as quick
	Horizon    float64 // s
	Sample     float64 // s between samples
	Seed       uint64
}

// IncidentEBS is the incident at its scale. The write-up gives no clock
// times, no cluster size, no spare share, no timeouts: those are choices,
// marked so below. The write-up's numbers are matched by calibration of the
// two free parameters that drive them (Intensity, RaceProb), see
// TestEBSIncidentScale.
func IncidentEBS() EBS {
	const h = 3600.0
	return EBS{
		// Choice: 1,000 nodes of 95 slots, 90 used (5% spare: the write-up
		// says spare capacity ran out, not how much there was).
		Nodes: 1000, Slots: 95, Volumes: 45000,
		// Calibrated: 11% of the nodes cut off gives 21% of the volumes a
		// replica on a cut-off node; nearly all notice within the cut, the
		// spare absorbs 11% of the volumes' worth, and about 9% are left
		// stuck; the race condition then adds about the write-up's 5%.
		// Choice: the cut lasts 20 min and a volume notices within 5 min on
		// average (the write-up gives neither).
		Intensity: 0.11, CutDuration: 1200, NoticeMean: 300,
		// "Did not back off aggressively enough": a constant 10 s (choice).
		Retry: Backoff{Base: 10, Factor: 1, Jitter: 0.2},
		// "Very low probability": calibrated to the extra 5% before
		// containment.
		RaceProb: 1.5e-6,
		// Choices: 4 zones, 200 threads, 0.1 s calls, 1 call/s per other
		// zone, 0.5 create-volume calls/s, a 300 s "long" timeout.
		Zones: 4, Threads: 200, ServiceTime: 0.1, OtherRate: 1, CreateRate: 0.5,
		CreateTimeout: 300, CreateMinFree: 0.01, NegotiatePer: 0.45,
		ReclaimMean: 24 * h,
		// The write-up's order of actions; the times are choices, except
		// that the first matches the day's status page (EBS API errors from
		// 12:55 to 2:55 AM PDT, about 2 h; not in the write-up).
		Operators: true, CreateOffAt: 2 * h, CutCPAt: 7.5 * h, ContainAt: 11 * h, ContainedPoll: 300,
		// "Recovery took days": capacity over day 2, the control plane
		// reopened over day 3, snapshot restores through day 4.
		AddCapacityAt: 24 * h, AddNodes: 150, AddSpan: 24 * h,
		ReopenAt: 48 * h, ReopenSpan: 24 * h, RestoreAt: 60 * h, RestoreSpan: 24 * h,
		StuckBound: 0.005, Quick: 3600, Horizon: 5 * 24 * h, Sample: 60, Seed: 1,
	}
}

// MitigatedEBS is the incident with the write-up's action items: more spare
// capacity (15% instead of 5%), aggressive back-off with jitter, the race
// condition fixed, short create-volume timeouts and a control plane that
// caps each zone at its share of the pool. The operators' timeline is kept.
func MitigatedEBS() EBS {
	m := IncidentEBS()
	m.Slots = 106 // 90 used: 15% spare
	m.Retry = Backoff{Base: 10, Factor: 2, Max: 600, Jitter: 0.5}
	m.RaceProb = 0
	m.CreateTimeout = 5
	m.ZoneCap = m.Threads / m.Zones
	return m
}

// WithTrigger returns the model with intensity (share of the zone's nodes
// cut off) and duration (s) as the trigger, and without the operators'
// actions, so that a sweep maps what the zone does by itself: recovers
// quickly, recovers slowly (stale replicas freed one by one), or stays
// down until operators act. The incident's own point,
// IncidentEBS().WithTrigger(0.11, 1200), stays down: the race condition
// keeps adding stuck volumes faster than stale replicas are freed.
func (m EBS) WithTrigger(intensity, duration float64) EBS {
	m.Intensity, m.CutDuration, m.Operators = intensity, duration, false
	return m
}

// EBSResult is what a run measured. Times are s after the network change.
type EBSResult struct {
	T           []float64
	Stuck       []float64 // share of the zone's volumes stuck (waiting for a replica, or lost)
	Remirroring []float64 // volumes waiting for a new replica
	Free        []float64 // free share of the live nodes' slots
	APIErrors   []float64 // share of the other zones' control-plane calls failing
	NodesFailed []float64 // nodes crashed by the race condition

	PeakStuck      float64
	PeakStuckAt    float64
	StuckAtContain float64 // share stuck when containment landed (NaN if not)
	PeakAPIErrors  float64
	// APIDegradedFrom/To: first and last sample with more than 5% of the
	// other zones' calls failing (NaN if none); APIDegraded: total s.
	APIDegradedFrom, APIDegradedTo, APIDegraded float64
	NodesCrashed                                int
	// OtherCalls and OtherOK: the other zones' calls from the change to
	// the horizon, and those answered (within SLO when it is set).
	OtherCalls, OtherOK int
	// StuckEnd: mean stuck share over the last EndWindow s of the run.
	StuckEnd float64
	// StuckByRace: volumes that needed re-mirroring because a node they
	// were on crashed (the write-up's "additional 5%" when over Volumes).
	StuckByRace int
	Lost        int // volumes that lost both replicas
	// Recovered: from when the stuck share stays at or under StuckBound to
	// the horizon (+Inf if it is over it at the end).
	Recovered float64
	CutEnd    float64
	Quick     float64
	Bound     float64
	Events    uint64
}

const (
	evOK uint8 = iota
	evPending
	evLost
)

type ebsVol struct {
	r     [2]int32 // replica nodes (r[0] the searcher while pending)
	state uint8
}

type ebsNode struct {
	free      int32
	alive     bool
	iso       bool
	scheduled bool
	attempt   int32
	pos       int32   // index in freeList, -1 if not there
	reopen    float64 // control-plane access back (after CutCPAt)
	pending   []int32 // volumes it searches a replica for
	vols      []int32 // volumes that have had a replica on it
}

type ebsRun struct {
	m        EBS
	vols     []ebsVol
	nodes    []ebsNode
	freeList []int32
	free     int // free slots on live nodes
	slots    int // slots of live nodes
	pending  int
	lost     int
	crashed  int
	cut      bool
	cutEnd   float64

	// control plane
	busy       int
	zbusy      []int
	otherCalls int
	otherFails int
	createOff  bool
	cpCut      bool
	contained  bool
	queues     [][]ebsReq // calls waiting for a thread, per pool (QueueWait)
	res        EBSResult
	lastAPI    float64
}

func (e *ebsRun) at(t float64) bool { return e.m.Operators && t > 0 }

func (e *ebsRun) addFree(i int, d int32) {
	n := &e.nodes[i]
	n.free += d
	e.free += int(d)
	if n.free > 0 && n.pos < 0 {
		n.pos = int32(len(e.freeList))
		e.freeList = append(e.freeList, int32(i))
	} else if n.free <= 0 && n.pos >= 0 {
		last := e.freeList[len(e.freeList)-1]
		e.freeList[n.pos] = last
		e.nodes[last].pos = n.pos
		e.freeList = e.freeList[:len(e.freeList)-1]
		n.pos = -1
	}
}

func (e *ebsRun) linkOpen(s *Sim, i int) bool {
	return !e.cpCut || s.Now() >= e.nodes[i].reopen
}

// cpCall asks the regional pool for a thread for hold seconds.
func (e *ebsRun) cpCall(s *Sim, zone int, hold float64) bool {
	if e.busy >= e.m.Threads || (e.m.ZoneCap > 0 && e.zbusy[zone] >= e.m.ZoneCap) {
		return false
	}
	e.busy++
	e.zbusy[zone]++
	s.Schedule(hold, ebsCPDone{e}, int64(zone))
	return true
}

type ebsCPDone struct{ e *ebsRun }

func (h ebsCPDone) Handle(s *Sim, zone int64) {
	h.e.busy--
	h.e.zbusy[zone]--
	h.e.serveQueue(s, int(zone))
}

// ebsOther: a call from another zone (arg).
type ebsOther struct{ e *ebsRun }

func (h ebsOther) Handle(s *Sim, zone int64) {
	e := h.e
	if e.m.QueueWait > 0 {
		e.ask(s, ebsReq{at: s.Now(), kind: reqOther, zone: int8(zone)})
	} else {
		e.answered(e.cpCall(s, int(zone), e.m.ServiceTime))
	}
	s.Schedule(s.Exp(1/e.m.OtherRate), h, zone)
}

// ebsCreate: a create-volume call from the degraded zone.
type ebsCreate struct{ e *ebsRun }

func (h ebsCreate) Handle(s *Sim, _ int64) {
	e := h.e
	switch {
	case e.createOff:
	case e.m.QueueWait > 0:
		e.ask(s, ebsReq{at: s.Now(), kind: reqCreate})
	default:
		e.cpCall(s, 0, e.createHold(0))
	}
	s.Schedule(s.Exp(1/e.m.CreateRate), h, 0)
}

func (e *ebsRun) schedRound(s *Sim, i int, delay float64) {
	n := &e.nodes[i]
	if n.scheduled {
		return
	}
	n.scheduled = true
	s.Schedule(delay, ebsRound{e}, int64(i))
}

// need: volume v needs a new replica, searched for by node searcher.
func (e *ebsRun) need(s *Sim, v int, searcher int32, other int32) {
	vol := &e.vols[v]
	vol.r = [2]int32{searcher, other}
	if vol.state != evPending {
		vol.state = evPending
		e.pending++
	}
	n := &e.nodes[searcher]
	n.pending = append(n.pending, int32(v))
	e.schedRound(s, int(searcher), 0)
}

// ebsNotice: volume arg notices that its partner is gone (during the cut).
type ebsNotice struct{ e *ebsRun }

func (h ebsNotice) Handle(s *Sim, arg int64) {
	e := h.e
	v := int(arg)
	vol := &e.vols[v]
	if !e.cut || vol.state != evOK {
		return
	}
	a, b := vol.r[0], vol.r[1]
	if !e.nodes[a].alive || !e.nodes[b].alive {
		return
	}
	if e.nodes[a].iso && !e.nodes[b].iso {
		a, b = b, a
	}
	e.need(s, v, a, b) // b's copy goes stale; it keeps its slot
}

// ebsRound: node arg's search round.
type ebsRound struct{ e *ebsRun }

func (h ebsRound) Handle(s *Sim, arg int64) {
	e := h.e
	i := int(arg)
	n := &e.nodes[i]
	n.scheduled = false
	if !n.alive {
		return
	}
	if e.cut && n.iso {
		e.schedRound(s, i, e.cutEnd-s.Now())
		return
	}
	p := e.current(i)
	if len(p) == 0 {
		n.attempt = 0
		return
	}
	open := e.linkOpen(s, i)
	if e.contained && (!open || e.free == 0) {
		// No futile contacts: wait for the control plane or free space.
		d := e.m.ContainedPoll
		if !open {
			d = math.Max(n.reopen-s.Now(), d)
		}
		e.schedRound(s, i, d)
		return
	}
	if open && e.m.QueueWait > 0 {
		n.scheduled = true // until the call is answered
		e.ask(s, ebsReq{at: s.Now(), kind: reqRound, arg: int32(i)})
		return
	}
	placed := 0
	if open && e.cpCall(s, 0, e.m.NegotiatePer*float64(len(p))) {
		placed = e.place(s, i, len(p))
	}
	e.settle(s, i, placed, 0)
}

// current drops from node i's pending the volumes it no longer searches for.
func (e *ebsRun) current(i int) []int32 {
	n := &e.nodes[i]
	p := n.pending[:0]
	for _, v := range n.pending {
		if vol := &e.vols[v]; vol.state == evPending && vol.r[0] == int32(i) {
			p = append(p, v)
		}
	}
	n.pending = p
	return p
}

// place gives node i's pending volumes free slots while there are any;
// at most most of them; it returns how many it placed (the first ones of
// n.pending).
func (e *ebsRun) place(s *Sim, i, most int) int {
	placed := 0
	for _, v := range e.nodes[i].pending[:min(most, len(e.nodes[i].pending))] {
		j := e.pick(s, i, int(e.vols[v].r[1]))
		if j < 0 {
			break
		}
		vol := &e.vols[v]
		stale := vol.r[1]
		vol.r[1] = int32(j)
		vol.state = evOK
		e.pending--
		e.addFree(j, -1)
		e.nodes[j].vols = append(e.nodes[j].vols, int32(v))
		placed++
		if stale >= 0 && e.nodes[stale].alive && e.m.ReclaimMean > 0 {
			s.Schedule(s.Exp(e.m.ReclaimMean), ebsReclaim{e}, int64(stale))
		}
	}
	return placed
}

// settle ends node i's round that placed its first placed volumes: the
// rest wait for the next round, after the back-off from wait s on.
func (e *ebsRun) settle(s *Sim, i, placed int, wait float64) {
	n := &e.nodes[i]
	n.pending = n.pending[placed:]
	failed := len(n.pending)
	if failed == 0 {
		n.attempt = 0
		return
	}
	if e.m.RaceProb > 0 && !e.contained && s.R.Float64() < 1-math.Pow(1-e.m.RaceProb, float64(failed)) {
		e.crash(s, i)
		return
	}
	n.attempt++
	e.schedRound(s, i, wait+math.Max(e.m.Retry.Delay(s, int(n.attempt)), 0.001))
}

// pick draws a live, reachable node with a free slot other than i and not.
func (e *ebsRun) pick(s *Sim, i, not int) int {
	if e.m.SpaceWait > 0 {
		return e.most(i, not)
	}
	for range 8 {
		if len(e.freeList) == 0 {
			return -1
		}
		j := int(e.freeList[s.R.IntN(len(e.freeList))])
		if j != i && j != not && !(e.cut && e.nodes[j].iso) {
			return j
		}
	}
	return -1
}

// most is the harness control plane's choice: the reachable node with the
// most free slots other than i and not (ties: the lowest index).
func (e *ebsRun) most(i, not int) int {
	best := -1
	for _, j := range e.freeList {
		k := int(j)
		if k == i || k == not || (e.cut && e.nodes[k].iso) {
			continue
		}
		if best < 0 || e.nodes[k].free > e.nodes[best].free || (e.nodes[k].free == e.nodes[best].free && k < best) {
			best = k
		}
	}
	return best
}

func (e *ebsRun) crash(s *Sim, i int) {
	n := &e.nodes[i]
	e.addFree(i, -n.free)
	n.alive = false
	e.slots -= e.m.Slots
	e.crashed++
	for _, v := range n.vols {
		vol := &e.vols[v]
		switch {
		case vol.state == evOK && (vol.r[0] == int32(i) || vol.r[1] == int32(i)):
			other := vol.r[0]
			if other == int32(i) {
				other = vol.r[1]
			}
			e.need(s, int(v), other, -1)
			e.res.StuckByRace++
		case vol.state == evPending && vol.r[0] == int32(i):
			vol.state = evLost
			e.pending--
			e.lost++
			e.res.Lost++
		case vol.state == evPending && vol.r[1] == int32(i):
			vol.r[1] = -1
		}
	}
	n.vols, n.pending = nil, nil
}

// ebsReclaim: one stale replica on node arg is dropped, if the control
// plane can be reached.
type ebsReclaim struct{ e *ebsRun }

func (h ebsReclaim) Handle(s *Sim, arg int64) {
	e := h.e
	i := int(arg)
	if !e.nodes[i].alive {
		return
	}
	if !e.linkOpen(s, i) || !e.cpCall(s, 0, e.m.ServiceTime) {
		s.Schedule(s.Exp(e.m.ReclaimMean), h, arg)
		return
	}
	e.addFree(i, 1)
	// Someone waiting for space: the contained nodes poll; the others
	// retry on their own.
}

type ebsCutEnd struct{ e *ebsRun }

func (h ebsCutEnd) Handle(_ *Sim, _ int64) { h.e.cut = false }

type ebsAction struct{ e *ebsRun }

// Handle runs operator action arg.
func (h ebsAction) Handle(s *Sim, arg int64) {
	e := h.e
	switch arg {
	case 0:
		e.createOff = true
	case 1:
		e.cpCut = true
	case 2:
		e.contained = true
		e.res.StuckAtContain = float64(e.pending+e.lost) / float64(e.m.Volumes)
	case 3:
		e.lost--
		e.res.Lost-- // restored (onto the new capacity; its slots are not modelled)
	case 4:
		for v := range e.vols {
			if e.vols[v].state == evLost {
				e.vols[v].state = evOK
				s.Schedule(s.Uniform(0, e.m.RestoreSpan), h, 3)
			}
		}
		e.res.Lost = e.lost
	}
}

type ebsJoin struct{ e *ebsRun }

func (h ebsJoin) Handle(_ *Sim, arg int64) {
	e := h.e
	i := int(arg)
	e.nodes[i].alive = true
	e.slots += e.m.Slots
	e.addFree(i, int32(e.m.Slots))
}

type ebsSample struct{ e *ebsRun }

func (h ebsSample) Handle(s *Sim, _ int64) {
	e := h.e
	r := &e.res
	now := s.Now()
	stuck := float64(e.pending+e.lost) / float64(e.m.Volumes)
	api := 0.0
	if e.otherCalls > 0 {
		api = float64(e.otherFails) / float64(e.otherCalls)
	}
	e.otherCalls, e.otherFails = 0, 0
	free := 0.0
	if e.slots > 0 {
		free = float64(e.free) / float64(e.slots)
	}
	r.T = append(r.T, now)
	r.Stuck = append(r.Stuck, stuck)
	r.Remirroring = append(r.Remirroring, float64(e.pending))
	r.Free = append(r.Free, free)
	r.APIErrors = append(r.APIErrors, api)
	r.NodesFailed = append(r.NodesFailed, float64(e.crashed))
	if stuck > r.PeakStuck {
		r.PeakStuck, r.PeakStuckAt = stuck, now
	}
	r.PeakAPIErrors = math.Max(r.PeakAPIErrors, api)
	if api > 0.05 {
		if math.IsNaN(r.APIDegradedFrom) {
			r.APIDegradedFrom = now
		}
		r.APIDegradedTo = now
		r.APIDegraded += e.m.Sample
	}
	if stuck > e.m.StuckBound {
		r.Recovered = now + e.m.Sample
	}
	s.Schedule(e.m.Sample, h, 0)
}

// Run simulates the zone and the regional control plane.
func (m EBS) Run() EBSResult {
	s := New(m.Seed)
	total := m.Nodes + max(m.AddNodes, 0)
	e := &ebsRun{m: m, vols: make([]ebsVol, m.Volumes), nodes: make([]ebsNode, total), zbusy: make([]int, max(m.Zones, 1)),
		queues: make([][]ebsReq, max(m.Zones, 1))}
	nan := math.NaN()
	e.res = EBSResult{StuckAtContain: nan, APIDegradedFrom: nan, APIDegradedTo: nan,
		CutEnd: m.CutDuration, Quick: m.Quick, Bound: m.StuckBound}
	// Placement: 2·Volumes replicas spread evenly over the nodes, shuffled
	// and paired; a pair on one node swaps with another replica.
	reps := make([]int32, 2*m.Volumes)
	if m.Ring {
		per := max(m.Volumes/m.Nodes, 1)
		for v := 0; v < m.Volumes; v++ {
			k := (v / per) % m.Nodes
			reps[2*v], reps[2*v+1] = int32(k), int32((k+1)%m.Nodes)
		}
	} else {
		for k := range reps {
			reps[k] = int32(k % m.Nodes)
		}
		s.R.Shuffle(len(reps), func(a, b int) { reps[a], reps[b] = reps[b], reps[a] })
		for v := 0; v < m.Volumes; v++ {
			for reps[2*v] == reps[2*v+1] {
				k := s.R.IntN(len(reps))
				reps[2*v+1], reps[k] = reps[k], reps[2*v+1]
			}
		}
	}
	for i := range e.nodes {
		e.nodes[i].pos = -1
	}
	for v := range e.vols {
		e.vols[v].r = [2]int32{reps[2*v], reps[2*v+1]}
		for _, j := range e.vols[v].r {
			e.nodes[j].vols = append(e.nodes[j].vols, int32(v))
		}
	}
	for i := 0; i < m.Nodes; i++ {
		e.nodes[i].alive = true
		e.slots += m.Slots
		e.addFree(i, int32(m.Slots-len(e.nodes[i].vols)))
	}
	// The trigger: a random Intensity of the nodes cut off.
	perm := s.R.Perm(m.Nodes)
	iso := int(math.Round(m.Intensity * float64(m.Nodes)))
	for _, i := range perm[:iso] {
		e.nodes[i].iso = true
	}
	if iso > 0 && m.CutDuration > 0 {
		e.cut, e.cutEnd = true, m.CutDuration
		s.At(m.CutDuration, ebsCutEnd{e}, 0)
		for v := range e.vols {
			r := e.vols[v].r
			if e.nodes[r[0]].iso || e.nodes[r[1]].iso {
				if d := s.Exp(m.NoticeMean); d < m.CutDuration {
					s.At(d, ebsNotice{e}, int64(v))
				}
			}
		}
	}
	// The control plane's callers.
	for z := 1; z < m.Zones; z++ {
		s.Schedule(s.Exp(1/m.OtherRate), ebsOther{e}, int64(z))
	}
	if m.CreateRate > 0 {
		s.Schedule(s.Exp(1/m.CreateRate), ebsCreate{e}, 0)
	}
	// The operators.
	if e.at(m.CreateOffAt) {
		s.At(m.CreateOffAt, ebsAction{e}, 0)
	}
	if e.at(m.CutCPAt) {
		s.At(m.CutCPAt, ebsAction{e}, 1)
		order := s.R.Perm(total)
		for k, i := range order {
			e.nodes[i].reopen = math.Inf(1)
			if e.at(m.ReopenAt) {
				e.nodes[i].reopen = m.ReopenAt + m.ReopenSpan*float64(k)/float64(total)
			}
		}
	}
	if e.at(m.ContainAt) {
		s.At(m.ContainAt, ebsAction{e}, 2)
	}
	if e.at(m.AddCapacityAt) {
		for i := m.Nodes; i < total; i++ {
			s.At(m.AddCapacityAt+s.Uniform(0, m.AddSpan), ebsJoin{e}, int64(i))
		}
	}
	if e.at(m.RestoreAt) {
		s.At(m.RestoreAt, ebsAction{e}, 4)
	}
	s.Schedule(0, ebsSample{e}, 0)
	s.Run(m.Horizon)
	if n := len(e.res.Stuck); n > 0 && e.res.Stuck[n-1] > m.StuckBound {
		e.res.Recovered = math.Inf(1)
	}
	e.res.NodesCrashed = e.crashed
	e.res.StuckEnd = stuckEnd(e.res, m.Horizon)
	e.res.Events = s.Events()
	return e.res
}

// EBSEndWindow is the end of a run whose stuck share is averaged into
// EBSResult.StuckEnd: the last 5 s, as the harness's ebs.stuck_share.end.
const EBSEndWindow = 5.0

func stuckEnd(r EBSResult, horizon float64) float64 {
	sum, n := 0.0, 0
	for i, t := range r.T {
		if t >= horizon-EBSEndWindow {
			sum += r.Stuck[i]
			n++
		}
	}
	if n == 0 {
		if len(r.Stuck) == 0 {
			return math.NaN()
		}
		return r.Stuck[len(r.Stuck)-1]
	}
	return sum / float64(n)
}

// Summary summarises an EBS run: Recovered when the stuck share is back
// under its bound within Quick of the cut's end, RecoveredSlowly when
// later, StayedDown when not by the horizon.
func (r EBSResult) Summary() Result {
	tr := func(name, src, unit string, v []float64) Trace {
		return Trace{Name: name, Source: src, Unit: unit, T: r.T, V: v}
	}
	out := Result{
		Series: []Trace{
			tr("zone.stuck_share", "zone", "share", r.Stuck),
			tr("zone.remirroring", "zone", "volumes", r.Remirroring),
			tr("zone.free_share", "zone", "share", r.Free),
			tr("region.api_error_share", "region", "share", r.APIErrors),
			tr("zone.nodes_failed", "zone", "nodes", r.NodesFailed),
		},
		Metrics: map[string]float64{
			"ebs.stuck_share.peak":           r.PeakStuck,
			"ebs.stuck_share.peak_at_s":      r.PeakStuckAt,
			"ebs.stuck_share.at_containment": r.StuckAtContain,
			"region.api_error_share.peak":    r.PeakAPIErrors,
			"region.api_degraded.first_s":    r.APIDegradedFrom,
			"region.api_degraded.last_s":     r.APIDegradedTo,
			"region.api_degraded.total_s":    r.APIDegraded,
			"zone.nodes_failed":              float64(r.NodesCrashed),
			"ebs.stuck_by_race":              float64(r.StuckByRace),
			"ebs.volumes_lost_at_end":        float64(r.Lost),
			"ebs.recovered_s":                r.Recovered,
			"ebs.stuck_share.end":            r.StuckEnd,
			"sim.events":                     float64(r.Events),
		},
		Events: r.Events,
	}
	if r.OtherCalls > 0 {
		out.Metrics["ebs.create_success.other_zones"] = float64(r.OtherOK) / float64(r.OtherCalls)
	}
	switch {
	case r.Recovered <= r.CutEnd+r.Quick:
		out.Outcome, out.Why = Recovered, fmt.Sprintf("stuck share at or under %.1f%% from %.0f s after the change, within %.0f s of the network coming back", 100*r.Bound, r.Recovered, r.Quick)
	case !math.IsInf(r.Recovered, 1):
		out.Outcome, out.Why = RecoveredSlowly, fmt.Sprintf("stuck share back at or under %.1f%% only %.1f h after the change", 100*r.Bound, r.Recovered/3600)
	default:
		out.Outcome, out.Why = StayedDown, fmt.Sprintf("%.1f%% of the zone's volumes still stuck at the horizon", 100*r.Stuck[len(r.Stuck)-1])
	}
	return out
}
