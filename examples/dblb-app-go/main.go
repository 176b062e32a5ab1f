// Command dblb-app is an app pod that reads from the PostgreSQL replicas it
// finds by DNS and writes to the primary, as a Rails database load
// balancer does. It knows nothing of the lab but its environment
// (PG_PRIMARY, DNS_SERVER, ...: see envs below).
//
// By default it does what GitLab's code did in April 2022: a lookup that
// gets a reply with no replica (an empty answer, NXDOMAIN, SERVFAIL)
// replaces the list with an empty one, and every read goes to the primary
// until a lookup finds replicas again. With -keep it keeps the last list
// it had, and retries a failed lookup 3 times after 100-200 ms. The pod
// runs -workers workers (Puma's), each with its own discovery, list and
// pools, sharing the pod's rates.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	if err := run(); err != nil {
		slog.Error("dblb-app", "err", err)
		os.Exit(1)
	}
}

// config is what the environment says.
type config struct {
	dns, name, primary, user, db string
	readRate, writeRate          float64
	rows, readRows               int
	interval, timeout            time.Duration
	seed                         uint64
	keep                         bool
	workers                      int
}

func env(name string) string { return os.Getenv("CHAOSLAB_" + name) }

func number(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(env(name), 64); err == nil {
		return v
	}
	return def
}

func load() config {
	c := config{dns: env("DNS_SERVER"), name: env("REPLICA_NAME"), primary: env("PG_PRIMARY"), user: env("PG_USER"), db: env("PG_DATABASE"),
		readRate: number("READ_RATE", 40), writeRate: number("WRITE_RATE", 4), rows: int(number("ROWS", 100000)), readRows: int(number("READ_ROWS", 2000)),
		interval: time.Duration(number("DISCOVERY_INTERVAL_MS", 3000)) * time.Millisecond,
		timeout:  time.Duration(number("QUERY_TIMEOUT_MS", 2000)) * time.Millisecond, seed: uint64(number("SEED", 1))}
	flag.BoolVar(&c.keep, "keep", false, "keep the last replica list when a lookup fails or finds none")
	flag.IntVar(&c.workers, "workers", 4, "workers in the pod, each with its own discovery, list and pools")
	flag.Parse()
	c.workers = max(c.workers, 1)
	c.readRate, c.writeRate = c.readRate/float64(c.workers), c.writeRate/float64(c.workers)
	return c
}

func run() error {
	c := load()
	if c.dns == "" || c.primary == "" || c.name == "" {
		return fmt.Errorf("want CHAOSLAB_DNS_SERVER, CHAOSLAB_REPLICA_NAME and CHAOSLAB_PG_PRIMARY in the environment")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var wg sync.WaitGroup
	for w := range c.workers {
		a := &app{c: c, rng: rand.New(rand.NewPCG(c.seed, uint64(w))), pools: map[string]*pgxpool.Pool{}}
		defer a.close()
		wg.Go(func() { a.discover(ctx) })
		wg.Go(func() { a.every(ctx, c.readRate, a.read) })
		wg.Go(func() { a.every(ctx, c.writeRate, a.write) })
	}
	wg.Wait()
	return nil
}

// app is one worker's state: its replica list and its pools.
type app struct {
	c     config
	mu    sync.Mutex
	rng   *rand.Rand
	hosts []string
	pools map[string]*pgxpool.Pool
	reqs  sync.WaitGroup
}

// discover refreshes the replica list every interval plus up to a sixth.
func (a *app) discover(ctx context.Context) {
	for ctx.Err() == nil {
		a.refresh(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(a.c.interval + time.Duration(a.rand(int64(a.c.interval/6)))):
		}
	}
}

func (a *app) refresh(ctx context.Context) {
	tries := 1
	if a.c.keep {
		tries = 3
	}
	for i := range tries {
		hosts, replied := lookup(ctx, a.c.dns, a.c.name, 5*time.Second) // glibc's default timeout
		switch {
		case len(hosts) > 0:
			a.set(hosts)
			return
		case replied && !a.c.keep:
			a.set(nil) // "no replicas": read from the primary
			return
		}
		if i < tries-1 {
			time.Sleep(100*time.Millisecond + time.Duration(a.rand(int64(100*time.Millisecond))))
		}
	}
}

func (a *app) set(h []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hosts = h
}

func (a *app) rand(n int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rng.Int64N(max(n, 1))
}

// every calls f rate times a second until ctx ends, each in its own
// goroutine (users keep coming whatever the database does).
func (a *app) every(ctx context.Context, rate float64, f func(context.Context)) {
	if rate <= 0 {
		return
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.reqs.Wait()
			return
		case <-t.C:
			a.reqs.Go(func() { f(ctx) })
		}
	}
}

func (a *app) read(ctx context.Context) {
	a.mu.Lock()
	addr := a.c.primary
	if len(a.hosts) > 0 {
		addr = a.hosts[a.rng.IntN(len(a.hosts))]
	}
	lo := a.rng.IntN(max(a.c.rows-a.c.readRows, 1))
	a.mu.Unlock()
	a.query(ctx, addr, `SELECT count(*), coalesce(sum(v), 0) FROM items WHERE id BETWEEN $1 AND $2`, lo, lo+a.c.readRows)
}

func (a *app) write(ctx context.Context) {
	id := int(a.rand(int64(a.c.rows)))
	a.query(ctx, a.c.primary, `UPDATE items SET v = v + 1 WHERE id = $1 AND $2 >= 0`, id, 0)
}

func (a *app) query(ctx context.Context, addr, sql string, x, y int) {
	p, err := a.pool(addr)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, a.c.timeout)
	defer cancel()
	rows, err := p.Query(ctx, sql, x, y)
	if err == nil {
		rows.Close()
	}
}

func (a *app) pool(addr string) (*pgxpool.Pool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.pools[addr]; ok {
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=2", a.c.user, addr, a.c.db))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 8
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	a.pools[addr] = p
	return p, nil
}

func (a *app) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pools {
		p.Close()
	}
}
