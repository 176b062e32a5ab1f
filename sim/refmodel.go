package sim

// RetryQueue is the reference model the engine is benchmarked with, next to
// the same model in SimPy (testdata/retryqueue_simpy.py): requests arrive as
// a Poisson stream at a station of Workers workers with exponential service
// times; a request that is still queued Timeout seconds after it was sent is
// withdrawn (its client gives up on that attempt) and sent again after the
// Backoff, up to Retries times. It is the smallest model with the retry
// amplification behind metastable failures: past a load where timeouts
// start, every timeout adds work.
type RetryQueue struct {
	Rate        float64 // arrivals per second
	Workers     int
	ServiceMean float64 // seconds
	Timeout     float64 // seconds a request may wait in the queue
	Retries     int
	Backoff     Backoff
	Horizon     float64 // seconds of virtual time
	Seed        uint64
}

// RetryQueueResult is what a run counted.
type RetryQueueResult struct {
	Arrivals, Attempts, Served, TimedOut, GaveUp uint64
	MaxQueue                                     int
	Utilisation                                  float64
	Events                                       uint64
}

// Per-attempt states.
const (
	rqQueued uint8 = iota + 1
	rqInService
	rqDone
	rqWithdrawn
)

type rqRun struct {
	m       RetryQueue
	st      Station
	state   []uint8 // by attempt id
	request []int32 // attempt id -> request id
	tries   []uint8 // by request id: attempts so far
	res     RetryQueueResult
}

// Run simulates the model.
func (m RetryQueue) Run() RetryQueueResult {
	s := New(m.Seed)
	r := &rqRun{m: m}
	r.st = Station{
		Workers:   m.Workers,
		Service:   func(s *Sim, _ int64) float64 { return s.Exp(m.ServiceMean) },
		Started:   func(_ *Sim, a int64) { r.state[a] = rqInService },
		Done:      func(_ *Sim, a int64) { r.state[a] = rqDone; r.res.Served++ },
		Withdrawn: func(a int64) bool { return r.state[a] == rqWithdrawn },
	}
	s.Schedule(s.Exp(1/m.Rate), rqArrival{r}, 0)
	s.Run(m.Horizon)
	r.res.MaxQueue = r.st.MaxQueue
	r.st.account(s)
	if m.Horizon > 0 && m.Workers > 0 {
		r.res.Utilisation = r.st.BusyTime / (m.Horizon * float64(m.Workers))
	}
	r.res.Events = s.Events()
	return r.res
}

type rqArrival struct{ r *rqRun }

// Handle: a new request arrives and the next arrival is scheduled.
func (h rqArrival) Handle(s *Sim, _ int64) {
	r := h.r
	r.res.Arrivals++
	req := int32(len(r.tries))
	r.tries = append(r.tries, 0)
	r.send(s, req)
	s.Schedule(s.Exp(1/r.m.Rate), h, 0)
}

// send makes one attempt of request req.
func (r *rqRun) send(s *Sim, req int32) {
	r.tries[req]++
	r.res.Attempts++
	a := int64(len(r.state))
	r.state = append(r.state, rqQueued)
	r.request = append(r.request, req)
	r.st.Arrive(s, a)
	if r.state[a] == rqQueued {
		s.Schedule(r.m.Timeout, rqTimeout{r}, a)
	}
}

type rqTimeout struct{ r *rqRun }

// Handle: the attempt's client stops waiting if it is still queued.
func (h rqTimeout) Handle(s *Sim, a int64) {
	r := h.r
	if r.state[a] != rqQueued {
		return
	}
	r.state[a] = rqWithdrawn
	r.st.Withdraw()
	r.res.TimedOut++
	req := r.request[a]
	k := int(r.tries[req])
	if k > r.m.Retries {
		r.res.GaveUp++
		return
	}
	s.Schedule(r.m.Backoff.Delay(s, k), rqRetry{r}, int64(req))
}

type rqRetry struct{ r *rqRun }

func (h rqRetry) Handle(s *Sim, req int64) { h.r.send(s, int32(req)) }
