package dblb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// replicaName is what the pods look up (pgconsul's default service and tag).
const replicaName = "replica.patroni.service.consul."

// process is one app process of a pod (a Puma worker): its discovery
// loop, its host list, its pools and its load.
type process struct {
	id      string
	pod     int
	dnsAddr string
	primary string // the primary's host:port
	s       *Settings
	rec     *recorder

	mu    sync.Mutex
	rng   *rand.Rand
	hosts []string // the replicas listed; empty: reads go to the primary
	pools map[string]*pgxpool.Pool

	answered, empty, failed atomic.Int64
	inflight                atomic.Int64
	lookupID                atomic.Uint32
}

func newProcess(id string, pod int, dnsAddr, primary string, s *Settings, rec *recorder, seed uint64) *process {
	return &process{id: id, pod: pod, dnsAddr: dnsAddr, primary: primary, s: s, rec: rec,
		rng: rand.New(rand.NewPCG(seed, 0x0206)), pools: map[string]*pgxpool.Pool{}}
}

// discover is the service discovery thread: refresh, then sleep
// max(interval, TTL) + rand(0..jitter) (Consul's DNS TTL for services is
// 0 unless set, so the interval rules).
func (p *process) discover(ctx context.Context) {
	for ctx.Err() == nil {
		p.refresh(ctx)
		if !lab.Sleep(ctx, p.s.Interval.D()+p.randDur(0, p.s.Jitter.D())) {
			return
		}
	}
}

// refresh is one perform_service_discovery: one lookup (2022), or up to
// laterRetries with a short jittered delay (later).
func (p *process) refresh(ctx context.Context) {
	tries := 1
	if p.s.Discovery == DiscoveryLater {
		tries = laterRetries
	}
	for i := range tries {
		a := lookupSRV(ctx, p.dnsAddr, replicaName, p.s.LookupTimeout.D(), uint16(p.lookupID.Add(1)))
		if ctx.Err() != nil {
			return
		}
		switch {
		case len(a.Hosts) > 0:
			p.answered.Add(1)
			p.setHosts(a.Hosts)
			return
		case a.Err == nil:
			p.empty.Add(1)
			if p.s.Discovery == Discovery2022 {
				// replace_hosts([]): every read now goes to the primary.
				p.setHosts(nil)
				return
			}
		default:
			p.failed.Add(1)
		}
		// Rescued: the list stays as it is.
		if i < tries-1 && !lab.Sleep(ctx, p.randDur(retryDelayMin, retryDelayMax)) {
			return
		}
	}
}

func (p *process) setHosts(h []string) {
	p.mu.Lock()
	p.hosts = h
	p.mu.Unlock()
}

// listed is how many replicas the process lists.
func (p *process) listed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.hosts)
}

func (p *process) randDur(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return lo + time.Duration(p.rng.Int64N(int64(hi-lo)))
}

// pick is where a read goes: a random listed replica, else the primary
// ("No secondaries were available, using primary instead").
func (p *process) pick() (addr string, primary bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.hosts) == 0 {
		return p.primary, true
	}
	return p.hosts[p.rng.IntN(len(p.hosts))], false
}

// pool is the process's pool of connections to addr (made on first use).
func (p *process) pool(addr string) (*pgxpool.Pool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl, ok := p.pools[addr]; ok {
		return pl, nil
	}
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&application_name=%s&connect_timeout=2", addr, p.id))
	if err != nil {
		return nil, fmt.Errorf("configure pool: %w", err)
	}
	cfg.MaxConns = int32(p.s.PoolSize)
	pl, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	p.pools[addr] = pl
	return pl, nil
}

// load sends reads and writes at the process's rates (open loop) until
// ctx ends; a request that finds 4 pools' worth in flight fails at once
// (the app's queue is full).
func (p *process) load(ctx context.Context, wg *sync.WaitGroup) {
	every := time.Duration(float64(time.Second) / (p.s.ReadRate + p.s.WriteRate))
	writeShare := p.s.WriteRate / (p.s.ReadRate + p.s.WriteRate)
	// Start at a random phase so that the processes do not tick together.
	if !lab.Sleep(ctx, p.randDur(0, every)) {
		return
	}
	lab.Every(ctx, every, func() { p.send(ctx, wg, writeShare) })
}

// send sends one query, a write with probability writeShare, unless the
// app's queue is full (counted as a failed request).
func (p *process) send(ctx context.Context, wg *sync.WaitGroup, writeShare float64) {
	p.mu.Lock()
	write := p.rng.Float64() < writeShare
	lo := p.rng.IntN(max(p.s.Rows-p.s.ReadRows, 1))
	p.mu.Unlock()
	if p.inflight.Load() >= int64(4*p.s.PoolSize) {
		p.rec.request(time.Now(), write, !write, 0, false)
		return
	}
	p.inflight.Add(1)
	wg.Go(func() {
		defer p.inflight.Add(-1)
		if write {
			p.write(ctx, lo)
		} else {
			p.read(ctx, lo)
		}
	})
}

func (p *process) read(ctx context.Context, lo int) {
	addr, primary := p.pick()
	began := time.Now()
	ok := p.query(ctx, addr, `SELECT count(*), coalesce(sum(v), 0) FROM items WHERE id BETWEEN $1 AND $2`, lo, lo+p.s.ReadRows)
	if ctx.Err() != nil {
		return
	}
	p.rec.request(began, false, primary, time.Since(began), ok)
}

func (p *process) write(ctx context.Context, lo int) {
	began := time.Now()
	ok := p.query(ctx, p.primary, `UPDATE items SET v = v + 1 WHERE id = $1 RETURNING 0, 0`, lo, 0)
	if ctx.Err() != nil {
		return
	}
	p.rec.request(began, true, true, time.Since(began), ok)
}

// query runs one statement that returns two numbers, within the query
// timeout; false when it failed.
func (p *process) query(ctx context.Context, addr, sql string, a, b int) bool {
	pl, err := p.pool(addr)
	if err != nil {
		return false
	}
	qctx, cancel := context.WithTimeout(ctx, p.s.QueryTimeout.D())
	defer cancel()
	var x, y int64
	if b == 0 {
		err = pl.QueryRow(qctx, sql, a).Scan(&x, &y)
	} else {
		err = pl.QueryRow(qctx, sql, a, b).Scan(&x, &y)
	}
	return err == nil
}

// close closes the process's pools.
func (p *process) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pl := range p.pools {
		pl.Close()
	}
}
