// Package fleet runs the IL-0384 front-end fleet on this machine: N server
// processes (chaoslab agent kinesis-frontend), each in a cgroup of its own
// whose pids limit is the server's OS thread limit, a health checker that
// removes servers that do not answer or never complete their shard-map (as
// the incident's load balancers did), the capacity addition and removal,
// and the operator's restart of the fleet at a set rate.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Config of a fleet.
type Config struct {
	*Settings
	// Env is the variant's: where servers run, its clock, events and logs.
	Env *lab.Env
	// Etcd are the etcd endpoints as the servers reach them.
	Etcd   []string
	Prefix string
	// HealthInterval is the period of the health checks (default 1s).
	HealthInterval time.Duration
	// Registry, when set, is where the health check reads a server's
	// route when its printed line is late (route.go).
	Registry Registry
}

// Sample is one observation of one server.
type Sample struct {
	T        float64
	Up       bool // a process runs
	Ready    bool // answered /status with a complete shard-map
	Answered bool
	Threads  int // from /proc (0 when down)
	Pids     int // pids.current of its cgroup
	Peers    int
	Synced   int
}

// Exit is how one incarnation of a server ended.
type Exit struct {
	T            float64
	Server       string
	How          string
	ThreadLimit  bool // the Go runtime could not create an OS thread
	ByHarness    string
	Code         int
	Signal       string
	PidsLimitHit uint64 // clones refused by pids.max during the incarnation
	Threads      int    // the last thread count seen
}

// Server is one slot of the fleet.
type Server struct {
	ID    string
	Index int
	Added bool // part of the capacity addition

	f        *Fleet
	mu       sync.Mutex
	inc      int
	starting bool // an incarnation is being launched
	// startTimes are the run's clock at each incarnation's start.
	startTimes []float64
	proc       lab.Proc
	desc       string // its last process ("pid 123", "container NAME")
	port       string // of its HTTP endpoints, as it printed it
	running    int    // the incarnation of proc
	routesRead int    // routes read from the registration (route.go)
	started    time.Time
	done       chan struct{}
	stopping   string // why the harness is stopping it
	readyAt    time.Time
	removed    bool
	samples    []Sample
	exits      []Exit
	starts     int
	removals   int
	fails      int
	logPath    string
	retired    bool // capacity removed: no longer part of the fleet
	// twins are its next incarnations made ahead (ahead.go); preparing:
	// one is being made; wantStart: start it as soon as it is.
	twins                []*launch
	preparing, wantStart bool
}

// Fleet is a running fleet.
type Fleet struct {
	cfg     Config
	log     *slog.Logger
	mu      sync.Mutex
	servers []*Server
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	http    *http.Client
	restart chan *Server
	// restarting is set once the operator's restart has begun.
	restarting bool
	restartAt  time.Time
	// closed is set by Close; launching counts starts in flight, which
	// Close waits for before it stops the servers (a start that finished
	// after the stop would leave its server running).
	closed    bool
	launching sync.WaitGroup
	// ahead: servers keep incarnations made ahead for their next exits
	// (ahead.go), at most aheadAtOnce being made at once (aheadSem).
	ahead    lab.Preparer
	aheadSem chan struct{}
}

// Start launches the fleet's servers (spread over StartSpread) and its
// health checker; it returns at once. Close stops everything.
func Start(ctx context.Context, cfg Config) (*Fleet, error) {
	if cfg.Servers < 1 {
		return nil, errors.New("start fleet: want at least 1 server")
	}
	if cfg.Env == nil || len(cfg.Etcd) == 0 {
		return nil, errors.New("start fleet: an environment and etcd are required")
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = time.Second
	}
	fctx, cancel := context.WithCancel(ctx)
	f := &Fleet{cfg: cfg, log: cfg.Env.Log, ctx: fctx, cancel: cancel,
		http:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}},
		restart: make(chan *Server, 4096)}
	for i := 1; i <= cfg.Servers; i++ {
		f.servers = append(f.servers, f.newServer(i, false))
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for i, s := range f.Originals() {
			if i > 0 && cfg.StartSpread > 0 {
				if !lab.Sleep(fctx, cfg.StartSpread.D()/time.Duration(cfg.Servers)) {
					return
				}
			}
			// Starts overlap: a container takes a while to create.
			f.wg.Add(1)
			go func() { defer f.wg.Done(); f.start(s) }()
		}
	}()
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.checkHealth(fctx) }()
	return f, nil
}

func (f *Fleet) newServer(i int, added bool) *Server {
	id := fmt.Sprintf("fe-%02d", i)
	abs, _ := f.cfg.Env.LogPath(id)
	return &Server{ID: id, Index: i, Added: added, f: f, logPath: abs}
}

// Servers returns every slot, originals first, added ones after.
func (f *Fleet) Servers() []*Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Server(nil), f.servers...)
}

// Originals returns the fleet before the capacity addition.
func (f *Fleet) Originals() []*Server {
	var out []*Server
	for _, s := range f.Servers() {
		if !s.Added {
			out = append(out, s)
		}
	}
	return out
}

// Active returns the servers currently part of the fleet (retired added
// capacity excluded).
func (f *Fleet) Active() []*Server {
	var out []*Server
	for _, s := range f.Servers() {
		s.mu.Lock()
		r := s.retired
		s.mu.Unlock()
		if !r {
			out = append(out, s)
		}
	}
	return out
}

// Name is the fleet's name as a fault target.
func (f *Fleet) Name() string { return "fleet" }

func (f *Fleet) event(kind, source, detail string) { f.cfg.Env.Event(kind, source, detail) }

// program is one incarnation of a server: chaoslab's front-end agent
// under the thread limit (pids) and CPU share.
func (f *Fleet) program(s *Server, inc int, stderr io.Writer) lab.Program {
	c := f.cfg
	host, adv := c.Env.Site.Listen()
	var p lab.Program
	if c.Program != nil {
		p = f.userProgram(s, inc, host, adv)
	} else {
		p.Agent = AgentName
		p.Config = frontend.Config{Settings: c.Settings.Settings, ID: s.ID, Index: s.Index, Etcd: c.Etcd, Prefix: c.Prefix,
			ListenHost: host, Advertise: adv, Incarnation: inc, Seed: f.seed(s, inc)}
	}
	if c.GoMaxProcs > 0 {
		p.Env = append(p.Env, "GOMAXPROCS="+strconv.Itoa(c.GoMaxProcs))
	}
	p.Name, p.Alias, p.Role = fmt.Sprintf("%s-%d", s.ID, inc), s.ID, "frontend"
	p.Limits = lab.Limits{Pids: c.ThreadLimit, CPUCores: c.CPUQuota}
	p.Stderr, p.Stdout = stderr, func(line []byte) { s.listening(line) }
	return p
}

// seed is the seed of one incarnation of a server, whichever program it runs.
func (f *Fleet) seed(s *Server, inc int) uint64 {
	return f.cfg.Env.Seed + uint64(s.Index)*1000 + uint64(inc)
}

// listening reads the addresses a server prints once it listens: the
// harness reaches its route port at the program's host.
func (s *Server) listening(line []byte) {
	var a struct{ Route string }
	if json.Unmarshal(line, &a) != nil || a.Route == "" {
		return
	}
	_, port, err := net.SplitHostPort(a.Route)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.port = port
}

// stop ends the incarnation of s (SIGTERM, SIGKILL after grace) and waits.
func (f *Fleet) stop(s *Server, why string, grace time.Duration) {
	s.mu.Lock()
	p, done := s.proc, s.done
	if p == nil {
		s.mu.Unlock()
		return
	}
	s.stopping = why
	s.mu.Unlock()
	sig := syscall.SIGTERM
	if grace <= 0 {
		sig = syscall.SIGKILL
	}
	_ = p.Signal(sig)
	select {
	case <-done:
	case <-time.After(max(grace, 2*time.Second)):
		_ = p.Signal(syscall.SIGKILL)
		<-done
	}
}

// AddCapacity starts the Added new servers at once.
func (f *Fleet) AddCapacity(ctx context.Context) ([]string, error) {
	n := f.cfg.Added()
	if n < 1 {
		return nil, errors.New("add capacity: the addition is 0 servers (fleet.add_fraction)")
	}
	f.mu.Lock()
	next := len(f.servers) + 1
	var added []*Server
	for i := range n {
		s := f.newServer(next+i, true)
		f.servers = append(f.servers, s)
		added = append(added, s)
	}
	f.mu.Unlock()
	var names []string
	var wg sync.WaitGroup
	for _, s := range added {
		wg.Add(1)
		go func() { defer wg.Done(); f.start(s) }()
		names = append(names, s.ID)
	}
	wg.Wait()
	return names, ctx.Err()
}

// RemoveCapacity stops the added servers and takes them out of the fleet.
func (f *Fleet) RemoveCapacity(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range f.Servers() {
		if !s.Added {
			continue
		}
		s.mu.Lock()
		s.retired = true
		s.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); f.stop(s, "capacity removed", 5*time.Second) }()
	}
	wg.Wait()
	return ctx.Err()
}

// Restart is the operator's restart: every server of the fleet is stopped
// and started again at RestartRate servers per second, and from then on a
// server that dies or is removed is started again at the same pace. It
// returns once every server was restarted once.
func (f *Fleet) Restart(ctx context.Context) error {
	pre, together := f.cfg.Env.Site.(lab.Preparer)
	together = together && f.cfg.RestartRate == 0
	f.mu.Lock()
	first := !f.restarting
	f.restarting = true
	f.restartAt = time.Now()
	f.mu.Unlock()
	if first {
		f.wg.Add(1)
		go func() { defer f.wg.Done(); f.restarter(f.ctx) }()
	}
	if together {
		f.keepAhead(pre)
		return f.restartTogether(ctx, pre, f.Active())
	}
	for _, s := range f.Active() {
		s.mu.Lock()
		running := s.proc != nil
		s.mu.Unlock()
		if running {
			// Its exit puts it on the restart queue.
			go f.stop(s, "restarted by the operator", 5*time.Second)
		} else {
			select {
			case f.restart <- s:
			case <-f.ctx.Done():
				return ctx.Err()
			}
		}
	}
	return ctx.Err()
}

// restarter starts queued servers at RestartRate.
func (f *Fleet) restarter(ctx context.Context) {
	var every time.Duration
	if f.cfg.RestartRate > 0 {
		every = time.Duration(float64(time.Second) / f.cfg.RestartRate)
	}
	next := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-f.restart:
			if d := time.Until(next); d > 0 && !lab.Sleep(ctx, d) {
				return
			}
			f.wg.Add(1)
			go func() { defer f.wg.Done(); f.start(s) }()
			next = time.Now().Add(every)
		}
	}
}

// checkHealth polls every running server's /status: the load balancer's
// health check, and the sampler of threads and readiness.
func (f *Fleet) checkHealth(ctx context.Context) {
	t := time.NewTicker(f.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var wg sync.WaitGroup
		for _, s := range f.Active() {
			wg.Add(1)
			go func() { defer wg.Done(); f.checkOne(ctx, s) }()
		}
		wg.Wait()
	}
}

func (f *Fleet) checkOne(ctx context.Context, s *Server) {
	now := time.Now()
	smp := Sample{T: f.cfg.Env.Clock(now)}
	s.mu.Lock()
	p, started := s.proc, s.started
	s.mu.Unlock()
	if p == nil {
		s.mu.Lock()
		s.samples = append(s.samples, smp)
		s.mu.Unlock()
		return
	}
	smp.Up = true
	if pid := p.Pid(); pid > 0 {
		smp.Threads, _ = frontend.ProcThreads(pid)
	}
	smp.Pids = int(p.Stats().Pids)
	route := s.Route()
	if route == "" {
		route = f.learnRoute(ctx, s)
	}
	var st frontend.Status
	if route != "" {
		rctx, cancel := context.WithTimeout(ctx, f.cfg.HealthTimeout.D())
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, "http://"+route+"/status", nil)
		resp, err := f.http.Do(req)
		if err == nil {
			if json.NewDecoder(resp.Body).Decode(&st) == nil {
				smp.Answered = true
			}
			resp.Body.Close()
		}
		cancel()
	}
	smp.Ready, smp.Peers, smp.Synced = st.Ready, st.PeersKnown, st.PeersSynced
	// A server is checked once it registered (said where it listens) or
	// its grace is over: a load balancer does not check an address it
	// was not given yet.
	inGrace := time.Since(started) < f.cfg.HealthGrace.D()
	healthy := (smp.Answered && (st.Ready || inGrace)) || (route == "" && inGrace)
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	if smp.Ready && s.readyAt.IsZero() {
		s.readyAt = now
	}
	if healthy {
		s.fails = 0
	} else {
		s.fails++
	}
	remove := s.fails >= f.cfg.HealthFailures && !s.removed && ctx.Err() == nil
	if remove {
		s.removed = true
		s.removals++
	}
	fails := s.fails
	s.mu.Unlock()
	if remove {
		why := "no answer to the health check"
		if smp.Answered {
			why = fmt.Sprintf("shard-map still incomplete %.0fs after start (%d of %d peers synced", time.Since(started).Seconds(), st.PeersSynced, st.PeersKnown)
			if len(st.Waiting) > 0 {
				why += "; waiting for " + strings.Join(st.Waiting, ", ")
			}
			why += ")"
		}
		f.event("removed", s.ID, fmt.Sprintf("judged unhealthy after %d failed checks (%s) and removed", fails, why))
		go f.stop(s, "removed by the health check", 0)
	}
}

// Close stops every server and waits for the fleet's goroutines.
func (f *Fleet) Close() error {
	f.mu.Lock()
	f.closed = true
	f.discardAll()
	f.mu.Unlock()
	f.cancel()
	f.launching.Wait()
	var wg sync.WaitGroup
	for _, s := range f.Servers() {
		wg.Add(1)
		go func() { defer wg.Done(); f.stop(s, "end of run", 3*time.Second) }()
	}
	wg.Wait()
	f.wg.Wait()
	return nil
}

// WaitReady waits until every server of the fleet routes (and, once the
// operator's restart began, was started since).
func (f *Fleet) WaitReady(ctx context.Context) error {
	for {
		f.mu.Lock()
		since := f.restartAt
		f.mu.Unlock()
		all := true
		for _, s := range f.Active() {
			s.mu.Lock()
			ok := s.proc != nil && !s.started.Before(since) && len(s.samples) > 0 && s.samples[len(s.samples)-1].Ready &&
				s.samples[len(s.samples)-1].T >= f.cfg.Env.Clock(s.started)
			s.mu.Unlock()
			if !ok {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if !lab.Sleep(ctx, 250*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// Pause stops every server (SIGSTOP); Resume continues them; Kill kills
// them; with Restart these make the fleet a fault target of its own.
func (f *Fleet) Pause() error { return f.signal(syscall.SIGSTOP) }

// Resume continues every paused server.
func (f *Fleet) Resume() error { return f.signal(syscall.SIGCONT) }

// Kill kills every server.
func (f *Fleet) Kill() error { return f.signal(syscall.SIGKILL) }

func (f *Fleet) signal(sig syscall.Signal) error {
	var errs []error
	for _, s := range f.Active() {
		s.mu.Lock()
		p := s.proc
		s.mu.Unlock()
		if p != nil {
			if err := p.Signal(sig); err != nil {
				errs = append(errs, fmt.Errorf("signal %s: %w", s.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// RestartStarted returns when the operator's restart began (zero if not).
func (f *Fleet) RestartStarted() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.restartAt
}

// RestartSpread is how far apart the servers' first starts after the
// operator's restart were, over how many servers, and whether the restart
// was to be all at once (RestartSpreader).
func (f *Fleet) RestartSpread() (time.Duration, int, bool) {
	at := f.RestartStarted()
	if at.IsZero() {
		return 0, 0, f.cfg.RestartRate == 0
	}
	var snaps []Snapshot
	for _, s := range f.Servers() {
		snaps = append(snaps, s.Snapshot())
	}
	spread, n := startSpread(snaps, f.cfg.Env.Clock(at))
	return time.Duration(spread * float64(time.Second)), n, f.cfg.RestartRate == 0
}

// Snapshot of a server for reports.
type Snapshot struct {
	ID     string
	Index  int
	Added  bool
	Starts int
	// StartTimes are the run's clock at each incarnation's start.
	StartTimes []float64
	Removals   int
	// RoutesRead counts the incarnations whose route the harness read
	// from their registration, their printed line late (route.go).
	RoutesRead int
	Samples    []Sample
	Exits      []Exit
	Log        string
}

// Snapshot returns what was recorded of s.
func (s *Server) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Snapshot{ID: s.ID, Index: s.Index, Added: s.Added, Starts: s.starts, StartTimes: slices.Clone(s.startTimes), Removals: s.removals, RoutesRead: s.routesRead,
		Samples: append([]Sample(nil), s.samples...), Exits: append([]Exit(nil), s.exits...), Log: s.logPath}
}

// Route returns where the harness reaches the server's HTTP endpoints
// ("" when down or not listening yet).
func (s *Server) Route() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.port == "" {
		return ""
	}
	return net.JoinHostPort(s.proc.Host(), s.port)
}

// Ready reports whether the last health check found the shard-map complete.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.samples)
	return s.proc != nil && n > 0 && s.samples[n-1].Ready
}

// threadLimitMarks are what the Go runtime prints when the OS refuses a
// thread (runtime/os_linux.go newosproc, and cgo's pthread_create).
var threadLimitMarks = []string{"failed to create new OS thread", "pthread_create failed", "newosproc"}

func describeExit(pe lab.ProcExit, stderrTail, why string) Exit {
	e := Exit{Code: pe.Code, Signal: pe.Signal, ByHarness: why}
	werr := pe.Err
	for _, m := range threadLimitMarks {
		if strings.Contains(stderrTail, m) {
			e.ThreadLimit = true
			break
		}
	}
	switch {
	case e.ThreadLimit:
		e.How = "the Go runtime aborted: " + firstLineWith(stderrTail, "runtime:")
	case why != "":
		e.How = why
	case e.Signal != "":
		e.How = "killed by signal " + e.Signal
	case werr != nil && e.Code == -1:
		e.How = "ended: " + werr.Error()
	default:
		e.How = fmt.Sprintf("exited with status %d: %s", e.Code, lastLine(stderrTail))
	}
	return e
}

func firstLineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return strings.TrimSpace(l)
		}
	}
	return lastLine(s)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// tailWriter passes writes on, keeps the last max bytes, and remembers the
// first line that shows the Go runtime could not create a thread (the
// goroutine dump after it can be far longer than the tail).
type tailWriter struct {
	w    io.Writer
	max  int
	mu   sync.Mutex
	buf  []byte
	mark string
}

func (t *tailWriter) marked() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mark != ""
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	if t.mark == "" {
		for _, m := range threadLimitMarks {
			if i := strings.Index(string(p), m); i >= 0 {
				line := string(p)
				if j := strings.LastIndex(line[:i], "\n"); j >= 0 {
					line = line[j+1:]
				}
				if j := strings.Index(line, "\n"); j >= 0 {
					line = line[:j]
				}
				t.mark = strings.TrimSpace(line)
				break
			}
		}
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

var (
	_ CapacityTarget = (*Fleet)(nil)
	_ faults.Target  = (*Fleet)(nil)
)
