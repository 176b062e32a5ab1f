package ebscontrol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Pool modes.
const (
	// Shared is one regional worker pool for every zone (2011).
	Shared = "shared"
	// PerZone is a pool of its own for each zone: a zone's slow calls
	// cannot take the others' workers.
	PerZone = "per-zone"
)

// Service is the control plane's, part of the workload's settings.
type Service struct {
	// Pool is how the worker pool is shared: shared (one regional pool,
	// as in 2011) or per-zone (pool_workers split evenly over the zones).
	Pool string `yaml:"pool" json:"pool"`
	// PoolWorkers is the control plane's workers in all.
	PoolWorkers int `yaml:"pool_workers" json:"pool_workers"`
	// RequestTimeout bounds each API call from its arrival, the wait for a
	// worker included: a call for space that finds none keeps its worker
	// and looks again until then.
	RequestTimeout lab.Duration `yaml:"request_timeout" json:"request_timeout"`
	// SpacePoll is how often a call waiting for space reads the zone's
	// capacity again.
	SpacePoll lab.Duration `yaml:"space_poll" json:"space_poll"`
}

// DefaultService is the 2011 control plane's.
func DefaultService() Service {
	return Service{Pool: Shared, PoolWorkers: 8, RequestTimeout: lab.Duration(15 * time.Second), SpacePoll: lab.Duration(200 * time.Millisecond)}
}

// MaxPoolWorkers is the most workers: each is a goroutine holding an etcd
// read every space_poll.
const MaxPoolWorkers = 1024

// Check validates the settings.
func (s *Service) Check(zones int) []lab.Problem {
	var c lab.Checks
	c.Need(s.Pool == Shared || s.Pool == PerZone, "pool", "want %s or %s, got %q", Shared, PerZone, s.Pool)
	c.Need(s.PoolWorkers >= 1 && s.PoolWorkers <= MaxPoolWorkers, "pool_workers", "want 1 to %d, got %d", MaxPoolWorkers, s.PoolWorkers)
	c.Need(s.Pool != PerZone || s.PoolWorkers >= zones, "pool_workers", "%d workers split over %d zones leaves a zone without one", s.PoolWorkers, zones)
	c.Msg("request_timeout", lab.CheckDuration(s.RequestTimeout, 10*time.Millisecond, "the least time an etcd transaction takes here"))
	c.Msg("space_poll", lab.CheckDuration(s.SpacePoll, time.Millisecond, ""))
	c.Need(s.SpacePoll <= s.RequestTimeout, "space_poll", "%s is longer than request_timeout %s: a call would never look twice", s.SpacePoll, s.RequestTimeout)
	return c
}

// Config is the control plane process's (chaoslab agent ebs-control).
type Config struct {
	Service `yaml:",inline"`
	Etcd    []string `json:"etcd"`
	Prefix  string   `json:"prefix"`
	Zones   []string `json:"zones"`
	Listen  string   `json:"listen"`
	// CreateSLO: a create-volume call answered OK within this long,
	// counted from its arrival, counts as fast (ZoneStatus.CreatesFast).
	CreateSLO time.Duration `json:"create_slo"`
	// OnListen is called with the API's address once it listens.
	OnListen func(addr string) `json:"-"`
	Logger   *slog.Logger      `json:"-"`
}

// Server is the control plane.
type Server struct {
	cfg   Config
	store Store
	pools map[string]*pool
	zones map[string]*counters
	next  atomic.Int64
}

type pool struct {
	name    string
	sem     chan struct{}
	waiting atomic.Int64
}

type counters struct {
	requests, ok, timeouts, queueTimeouts, noSpace atomic.Int64
	creates, createsFast, createsAbandoned         atomic.Int64
}

// NewServer builds the pools over a connected store.
func NewServer(cfg Config, st Store) *Server {
	s := &Server{cfg: cfg, store: st, pools: map[string]*pool{}, zones: map[string]*counters{}}
	shared := &pool{name: "region", sem: make(chan struct{}, cfg.PoolWorkers)}
	per := max(cfg.PoolWorkers/max(len(cfg.Zones), 1), 1)
	for _, z := range cfg.Zones {
		s.zones[z] = &counters{}
		if cfg.Pool == PerZone {
			s.pools[z] = &pool{name: z, sem: make(chan struct{}, per)}
		} else {
			s.pools[z] = shared
		}
	}
	return s
}

// Run connects to etcd and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("connect etcd: %w", err)
	}
	defer cli.Close()
	s := NewServer(cfg, Store{Cli: cli, Prefix: cfg.Prefix})
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Listen, "0"))
	if err != nil {
		return fmt.Errorf("listen api: %w", err)
	}
	if cfg.OnListen != nil {
		cfg.OnListen(ln.Addr().String())
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve api: %w", err)
	}
	return nil
}

// Handler is the API.
func (s *Server) Handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/remirror", s.remirror)
	m.HandleFunc("POST /v1/elect", s.elect)
	m.HandleFunc("POST /v1/volumes", s.create)
	m.HandleFunc("POST /v1/release", s.release)
	m.HandleFunc("DELETE /v1/volumes/{id}", s.remove)
	m.HandleFunc("GET /v1/status", s.status)
	return m
}

// pooled runs fn on a worker of the zone's pool within the request
// timeout (counted from the call's arrival) and writes its answer.
func (s *Server) pooled(w http.ResponseWriter, r *http.Request, zone string, fn func(ctx context.Context) (any, error)) {
	p, c := s.pools[zone], s.zones[zone]
	if p == nil {
		http.Error(w, "unknown zone "+strconv.Quote(zone), http.StatusBadRequest)
		return
	}
	c.requests.Add(1)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout.D())
	defer cancel()
	p.waiting.Add(1)
	select {
	case p.sem <- struct{}{}:
		p.waiting.Add(-1)
	case <-ctx.Done():
		p.waiting.Add(-1)
		c.queueTimeouts.Add(1)
		c.timeouts.Add(1)
		http.Error(w, "timed out waiting for a worker", http.StatusGatewayTimeout)
		return
	}
	defer func() { <-p.sem }()
	out, err := fn(ctx)
	switch {
	case err == nil:
		c.ok.Add(1)
		writeJSON(w, out)
	case errors.Is(err, ErrNoSpace) || ctx.Err() != nil:
		c.timeouts.Add(1)
		http.Error(w, err.Error(), http.StatusGatewayTimeout)
	case errors.Is(err, ErrNotPrimary):
		http.Error(w, err.Error(), http.StatusConflict)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// claimWaiting claims slots, looking again every space_poll while the
// zone has no room, until ctx ends.
func (s *Server) claimWaiting(ctx context.Context, zone string, exclude []string, n int) ([]string, error) {
	for {
		nodes, err := s.store.Claim(ctx, zone, exclude, n, 0)
		if !errors.Is(err, ErrNoSpace) {
			return nodes, err
		}
		s.zones[zone].noSpace.Add(1)
		if !lab.Sleep(ctx, s.cfg.SpacePoll.D()) {
			return nil, fmt.Errorf("claim slot: %w within %s", ErrNoSpace, s.cfg.RequestTimeout)
		}
	}
}

func (s *Server) remirror(w http.ResponseWriter, r *http.Request) {
	var q RemirrorRequest
	if !readJSON(w, r, &q) {
		return
	}
	s.pooled(w, r, q.Zone, func(ctx context.Context) (any, error) {
		nodes, err := s.claimWaiting(ctx, q.Zone, append([]string{q.Node}, q.Exclude...), 1)
		if err != nil {
			return nil, err
		}
		return RemirrorReply{Mirror: nodes[0]}, nil
	})
}

func (s *Server) elect(w http.ResponseWriter, r *http.Request) {
	var q ElectRequest
	if !readJSON(w, r, &q) {
		return
	}
	s.pooled(w, r, q.Zone, func(ctx context.Context) (any, error) {
		return s.store.Elect(ctx, q.Volume, q.Primary, q.Mirror)
	})
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var q CreateRequest
	if !readJSON(w, r, &q) {
		return
	}
	if c := s.zones[q.Zone]; c != nil {
		rw := &statusWriter{ResponseWriter: w}
		defer func() { c.countCreate(rw.code, time.Since(start) <= s.cfg.CreateSLO, r.Context().Err() != nil) }()
		w = rw
	}
	s.pooled(w, r, q.Zone, func(ctx context.Context) (any, error) {
		nodes, err := s.claimWaiting(ctx, q.Zone, nil, 2)
		if err != nil {
			return nil, err
		}
		v := Volume{ID: fmt.Sprintf("new-%s-%d", q.Zone, s.next.Add(1)), Zone: q.Zone, Primary: nodes[0], Mirror: nodes[1], Epoch: 1}
		if err := s.store.PutVolume(context.WithoutCancel(ctx), v); err != nil {
			return nil, err
		}
		return v, nil
	})
}

// release and remove give slots back without a worker: they only free.
func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	var q ReleaseRequest
	if !readJSON(w, r, &q) {
		return
	}
	if err := s.store.Release(r.Context(), q.Zone, q.Node); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, struct{}{})
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	if err := s.store.DeleteVolume(r.Context(), r.PathValue("id")); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, struct{}{})
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	st := Status{Pools: map[string]PoolStatus{}, Zones: map[string]ZoneStatus{}}
	seen := map[*pool]bool{}
	for z, p := range s.pools {
		c := s.zones[z]
		st.Zones[z] = ZoneStatus{Requests: c.requests.Load(), OK: c.ok.Load(), Timeouts: c.timeouts.Load(), QueueTimeouts: c.queueTimeouts.Load(), NoSpace: c.noSpace.Load(),
			Creates: c.creates.Load(), CreatesFast: c.createsFast.Load(), CreatesAbandoned: c.createsAbandoned.Load()}
		if !seen[p] {
			seen[p] = true
			st.Pools[p.name] = PoolStatus{Workers: cap(p.sem), Busy: len(p.sem), Waiting: int(p.waiting.Load())}
		}
	}
	writeJSON(w, st)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		http.Error(w, "decode request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// countCreate counts a create-volume call as it is answered: fast when
// it answered 200 within the SLO, abandoned when its caller hung up first.
func (c *counters) countCreate(code int, inSLO, gone bool) {
	c.creates.Add(1)
	switch {
	case gone:
		c.createsAbandoned.Add(1)
	case code == http.StatusOK && inSLO:
		c.createsFast.Add(1)
	}
}

// statusWriter keeps the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}
