package sim

import "math"

// The control plane's line of calls waiting for a thread (EBS.QueueWait),
// as the harness's control plane has it: each pool (the region's, or each
// zone's with ZoneCap) serves its calls first come, first served, and a
// call that has waited QueueWait fails.

const (
	reqOther  uint8 = iota // a call from another zone
	reqCreate              // create-volume from zone 0
	reqRound               // node arg's search round
)

type ebsReq struct {
	at   float64
	kind uint8
	zone int8
	arg  int32
}

func (e *ebsRun) pool(zone int) int {
	if e.m.ZoneCap > 0 {
		return zone
	}
	return 0
}

func (e *ebsRun) hasThread(zone int) bool {
	return e.busy < e.m.Threads && (e.m.ZoneCap <= 0 || e.zbusy[zone] < e.m.ZoneCap)
}

// take holds a thread of zone for hold s.
func (e *ebsRun) take(s *Sim, zone int, hold float64) {
	e.busy++
	e.zbusy[zone]++
	s.Schedule(hold, ebsCPDone{e}, int64(zone))
}

// answered counts an other zone's call, ok or not.
func (e *ebsRun) answered(ok bool) {
	e.otherCalls++
	e.res.OtherCalls++
	if ok {
		e.res.OtherOK++
	} else {
		e.otherFails++
	}
}

// createHold is how long a create-volume call that waited wait s holds
// its thread: the service time, or, when the zone has no room, the rest
// of its timeout.
func (e *ebsRun) createHold(wait float64) float64 {
	full := e.slots == 0 || float64(e.free)/float64(e.slots) < e.m.CreateMinFree
	if e.m.CreateNodes > 0 {
		full = len(e.freeList) < e.m.CreateNodes
	}
	if full {
		return math.Max(e.m.CreateTimeout-wait, e.m.ServiceTime)
	}
	return e.m.ServiceTime
}

// ask: call r gets a thread now, or waits in its pool's line.
func (e *ebsRun) ask(s *Sim, r ebsReq) {
	p := e.pool(int(r.zone))
	if len(e.queues[p]) == 0 && e.hasThread(int(r.zone)) {
		e.grant(s, r)
		return
	}
	e.queues[p] = append(e.queues[p], r)
}

// serveQueue gives the threads free in zone's pool to the calls waiting
// longest; a call that has waited QueueWait fails.
func (e *ebsRun) serveQueue(s *Sim, zone int) {
	p := e.pool(zone)
	for len(e.queues[p]) > 0 && e.hasThread(int(e.queues[p][0].zone)) {
		r := e.queues[p][0]
		e.queues[p] = e.queues[p][1:]
		if s.Now()-r.at > e.m.QueueWait {
			e.refuse(s, r)
			continue
		}
		e.grant(s, r)
	}
}

func (e *ebsRun) grant(s *Sim, r ebsReq) {
	wait := s.Now() - r.at
	switch r.kind {
	case reqOther:
		e.take(s, int(r.zone), e.m.ServiceTime)
		e.answered(e.m.SLO <= 0 || wait+e.m.ServiceTime <= e.m.SLO)
	case reqCreate:
		e.take(s, 0, e.createHold(wait))
	case reqRound:
		i := int(r.arg)
		n := &e.nodes[i]
		n.scheduled = false
		if !n.alive {
			return
		}
		want := len(e.current(i))
		if want == 0 {
			n.attempt = 0
			return
		}
		if e.m.SpaceWait > 0 {
			// The harness's call is one volume's: it gets a slot, or waits
			// for space until its timeout; the node's next volume asks at
			// once.
			if e.place(s, i, 1) == 1 {
				e.take(s, 0, e.m.ServiceTime)
				e.settle(s, i, 1, 0)
				n.attempt = 0
				if len(n.pending) > 0 {
					e.schedRound(s, i, 0)
				}
				return
			}
			hold := math.Max(e.m.SpaceWait-wait, e.m.ServiceTime)
			e.take(s, 0, hold)
			e.settle(s, i, 0, hold)
			return
		}
		placed := e.place(s, i, want)
		e.take(s, 0, e.m.NegotiatePer*float64(want))
		e.settle(s, i, placed, 0)
	}
}

func (e *ebsRun) refuse(s *Sim, r ebsReq) {
	switch r.kind {
	case reqOther:
		e.answered(false)
	case reqRound:
		i := int(r.arg)
		e.nodes[i].scheduled = false
		if e.nodes[i].alive {
			e.settle(s, i, 0, 0)
		}
	}
}
