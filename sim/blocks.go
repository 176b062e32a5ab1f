package sim

import "math"

// Station is a server with Workers identical workers and an unbounded FIFO
// queue. Jobs are int64 ids chosen by the model. Service times come from
// Service; Started is called as a job enters service and Done when it is
// done. A queued job can be withdrawn (its client stopped waiting): the
// model remembers which (Withdrawn reports it, in O(1)) and calls Withdraw
// once; the station skips it when its turn comes.
type Station struct {
	Workers   int
	Service   func(s *Sim, job int64) float64
	Started   func(s *Sim, job int64)
	Done      func(s *Sim, job int64)
	Withdrawn func(job int64) bool

	busy    int
	queue   []int64 // ring buffer
	head, n int
	queued  int // jobs in the queue not withdrawn

	// Figures.
	Served     uint64
	MaxQueue   int
	BusyTime   float64
	lastChange float64
}

// Queued is the number of jobs waiting (withdrawn ones excluded).
func (st *Station) Queued() int { return st.queued }

// Busy is the number of workers serving.
func (st *Station) Busy() int { return st.busy }

// Arrive offers a job to the station.
func (st *Station) Arrive(s *Sim, job int64) {
	if st.busy < st.Workers {
		st.start(s, job)
		return
	}
	if st.n == len(st.queue) {
		st.grow()
	}
	st.queue[(st.head+st.n)%len(st.queue)] = job
	st.n++
	st.queued++
	st.MaxQueue = max(st.MaxQueue, st.queued)
}

// Withdraw notes that one job waiting in the queue was withdrawn (the
// model's Withdrawn now reports it).
func (st *Station) Withdraw() { st.queued-- }

func (st *Station) grow() {
	nq := make([]int64, max(16, 2*len(st.queue)))
	for i := 0; i < st.n; i++ {
		nq[i] = st.queue[(st.head+i)%len(st.queue)]
	}
	st.queue, st.head = nq, 0
}

func (st *Station) account(s *Sim) {
	st.BusyTime += float64(st.busy) * (s.Now() - st.lastChange)
	st.lastChange = s.Now()
}

func (st *Station) start(s *Sim, job int64) {
	st.account(s)
	st.busy++
	if st.Started != nil {
		st.Started(s, job)
	}
	s.Schedule(st.Service(s, job), stationDone{st}, job)
}

type stationDone struct{ st *Station }

func (d stationDone) Handle(s *Sim, job int64) {
	st := d.st
	st.account(s)
	st.busy--
	st.Served++
	for st.n > 0 {
		next := st.queue[st.head]
		st.head = (st.head + 1) % len(st.queue)
		st.n--
		if st.Withdrawn != nil && st.Withdrawn(next) {
			continue
		}
		st.queued--
		st.start(s, next)
		break
	}
	if st.Done != nil {
		st.Done(s, job)
	}
}

// Backoff is a retry policy: attempt k (from 1) waits Base*Factor^(k-1),
// capped at Max, then multiplied by a uniform jitter in [1-Jitter, 1+Jitter).
// The zero value retries at once.
type Backoff struct {
	Base, Factor, Max, Jitter float64
}

// Delay is the wait before retry attempt k (1 = the first retry).
func (b Backoff) Delay(s *Sim, k int) float64 {
	if b.Base <= 0 {
		return 0
	}
	f := b.Factor
	if f <= 0 {
		f = 1
	}
	d := b.Base * math.Pow(f, float64(k-1))
	if b.Max > 0 {
		d = math.Min(d, b.Max)
	}
	if b.Jitter > 0 {
		d *= s.Uniform(1-b.Jitter, 1+b.Jitter)
	}
	return d
}

// Link delivers after a fixed delay plus an exponential part with mean Jitter.
type Link struct {
	Delay, Jitter float64
}

// Send schedules h with arg at the far end.
func (l Link) Send(s *Sim, h Handler, arg int64) {
	d := l.Delay
	if l.Jitter > 0 {
		d += s.Exp(l.Jitter)
	}
	s.Schedule(d, h, arg)
}
