// Package zkmirror is the tree-mirror client of the IL-0587 replay: a process
// that mirrors a ZooKeeper subtree with go-zookeeper/zk the way a proxy
// mirrored its routing tree, with one of two strategies:
//
//   - full-refresh, like Curator's TreeCache: on every (re)connect, resumed
//     session or not, a getData and a getChildren with watch for every znode,
//     all issued at once, with no bound on requests in flight or queued, and
//     failed reads re-queued with Curator-style exponential back-off;
//   - paced, like Elastic's TreeWatcher: no refresh when the session is
//     resumed; a walk only on a new session, with at most Window reads in
//     flight so the server sets the pace, and at most Window more for the
//     re-reads that follow watch events (a resumed session's missed changes
//     come in a burst); a walk in progress is cancelled when its session is
//     lost.
//
// The client prints one JSON Sample per report interval on its output; the
// harness reads them as the client's figures.
package zkmirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Strategies.
const (
	FullRefresh = "full-refresh"
	Paced       = "paced"
)

// Client is a mirror client's own settings, declared once: part of the
// workload's settings in a scenario, and of each client's Config.
type Client struct {
	// Strategy is how a client (re)loads its mirror: full-refresh
	// (Curator's TreeCache) or paced (TreeWatcher).
	Strategy string `yaml:"strategy" json:"strategy"`
	// Window bounds a paced client's reads in flight (and, as many again,
	// its re-reads after watch events).
	Window int `yaml:"window" json:"window"`
	// Retries is how many times a failed read is re-queued (full-refresh
	// re-queues like Curator's background retry; paced retries after the
	// session is back).
	Retries int `yaml:"retries" json:"retries"`
	// RetryBase is the first back-off of a re-queued read (Curator's
	// baseSleepTime).
	RetryBase lab.Duration `yaml:"retry_base" json:"retry_base"`
	// SessionTimeout is the ZooKeeper session timeout a client asks for.
	SessionTimeout lab.Duration `yaml:"session_timeout" json:"session_timeout"`
	// ReportInterval is how often each client reports its figures.
	ReportInterval lab.Duration `yaml:"report_interval" json:"report_interval"`
	// PacedStart makes a client's very first load (its first session, in
	// its first incarnation) a walk within Window whatever its Strategy:
	// a fleet comes up over hours, one instance at a time, so the first
	// load is the workload's, not the incident's. A client restarted
	// after a crash loads by its Strategy (false: always by Strategy).
	PacedStart bool `yaml:"paced_start" json:"paced_start"`
	// ReconnectJitter delays each connection attempt after the first by a
	// random wait up to it, so that clients that lost their server
	// together do not come back together (0: at once, as the incidents'
	// clients did).
	ReconnectJitter lab.Duration `yaml:"reconnect_jitter" json:"reconnect_jitter"`
}

// Bounds of a client's settings.
const (
	// MaxWindow is ZooKeeper's default globalOutstandingLimit: a server
	// stops reading requests beyond it.
	MaxWindow = 1000
	// MaxRetries bounds the re-queues of a read, whose back-off doubles.
	MaxRetries = 20
)

// Check validates a client's settings.
func (c Client) Check() []lab.Problem {
	var ps lab.Checks
	ps.Need(c.Strategy == FullRefresh || c.Strategy == Paced, "strategy", "want %s or %s, got %q", FullRefresh, Paced, c.Strategy)
	ps.Need(c.Window >= 1, "window", "want at least 1, got %d", c.Window)
	ps.Need(c.Window <= MaxWindow, "window", "%d is more than %d, ZooKeeper's globalOutstandingLimit: the server throttles beyond it, so the window bounds nothing", c.Window, MaxWindow)
	ps.Need(c.Retries >= 0, "retries", "want >= 0, got %d", c.Retries)
	ps.Need(c.Retries <= MaxRetries, "retries", "%d is more than %d: the back-off doubles with each retry (retry_base × 2^%d is already longer than any run)", c.Retries, MaxRetries, MaxRetries)
	ps.Msg("retry_base", lab.CheckDuration(c.RetryBase, time.Millisecond, "the least back-off that is not a busy loop"))
	ps.Msg("session_timeout", lab.CheckDuration(c.SessionTimeout, time.Second, "the least session timeout ZooKeeper's clients ask for"))
	ps.Msg("report_interval", lab.CheckDuration(c.ReportInterval, 100*time.Millisecond, "more samples than 10 a second per client flood the controller"))
	ps.Need(c.ReconnectJitter >= 0, "reconnect_jitter", "want >= 0, got %s", c.ReconnectJitter)
	ps.Need(c.ReconnectJitter.D() < c.SessionTimeout.D(), "reconnect_jitter", "%s is not shorter than session_timeout (%s): a client waiting that long to reconnect loses its session", c.ReconnectJitter, c.SessionTimeout)
	return ps
}

// Config of one mirror client: the JSON document its agent process gets.
type Config struct {
	Client
	ID      string   `json:"id"`
	Servers []string `json:"servers"`
	// Root is the subtree to mirror.
	Root string `json:"root"`
	// HotCount is the number of hot znodes the writer updates.
	HotCount int    `json:"hot_count"`
	Seed     uint64 `json:"seed"`
	// Incarnation counts the client's restarts (0: its first process).
	Incarnation int `json:"incarnation"`
	// Control is a file the client reads at every report: a strategy to
	// switch to while it runs (see Switch; "": none).
	Control string       `json:"control,omitempty"`
	Logger  *slog.Logger `json:"-"`
}

// Sample is what a client reports each interval.
type Sample struct {
	UnixMS     int64  `json:"t"`
	ID         string `json:"id"`
	State      string `json:"state"`
	Strategy   string `json:"strategy"`
	SessionID  int64  `json:"session_id"`
	InFlight   int64  `json:"inflight"`
	Queued     int64  `json:"queued"`
	Completed  int64  `json:"completed"`
	Errors     int64  `json:"errors"`
	Reconnects int64  `json:"reconnects"`
	Sessions   int64  `json:"sessions"`
	Refreshes  int64  `json:"refreshes"`
	// Frontier is the znodes a paced walk has still to visit (paths, not
	// requests: nothing is sent for them yet).
	Frontier   int64 `json:"frontier"`
	Cancelled  int64 `json:"cancelled"`
	RSSBytes   int64 `json:"rss"`
	Goroutines int   `json:"goroutines"`
	Nodes      int   `json:"nodes"`
	HotKnown   int   `json:"hot_known"`
	// NextSeq is the lowest sequence number of a write the mirror has not
	// seen yet, over every hot znode (1 while some hot znode is unknown):
	// the harness turns it into staleness with the writer's log.
	NextSeq int64 `json:"next_seq"`
}

type entry struct {
	seq int64
	// idx is the znode's place in the writer's round robin, -1 if not hot.
	idx int
	// data is kept as the mirror holds it.
	data []byte
}

// Mirror is one running client.
type Mirror struct {
	cfg  Config
	conn *zk.Conn
	log  *slog.Logger
	rnd  *rand.Rand

	mu    sync.Mutex
	nodes map[string]*entry

	inflight, queued, completed, errs atomic.Int64
	frontier                          atomic.Int64
	reconnects, sessions, refreshes   atomic.Int64
	cancelled                         atomic.Int64
	state                             atomic.Value // string
	sessionID                         atomic.Int64
	walkMu                            sync.Mutex
	walkCancel                        context.CancelFunc
	sessionUp                         chan struct{} // closed when a session is up; replaced when lost
	sessionMu                         sync.Mutex
	ctx                               context.Context
	events                            chan zk.Event
	// strat is the strategy in use, switched by the control file.
	strat   atomic.Pointer[strategy]
	control controlFile
}

// Run mirrors until ctx ends, writing samples to out.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if ps := cfg.Check(); len(ps) > 0 {
		return fmt.Errorf("run mirror: %s: %s", ps[0].Field, ps[0].Msg)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	m := &Mirror{
		cfg:       cfg,
		log:       cfg.Logger,
		rnd:       rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		nodes:     map[string]*entry{},
		sessionUp: make(chan struct{}),
		ctx:       ctx,
		events:    make(chan zk.Event, 4096),
	}
	m.setStrategy(cfg.Strategy, cfg.Window)
	m.control.path = cfg.Control
	m.state.Store("connecting")
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout.D(),
		zk.WithLogger(zkLogger{cfg.Logger}),
		zk.WithDialer(m.dialer()),
		zk.WithEventCallback(func(ev zk.Event) {
			select {
			case m.events <- ev:
			default:
				// The event queue is full; a dropped node event is caught
				// up by the next refresh or watch.
			}
		}))
	if err != nil {
		return fmt.Errorf("connect zookeeper: %w", err)
	}
	m.conn = conn
	defer conn.Close()

	go m.handleEvents(ctx)
	enc := json.NewEncoder(out)
	tick := time.NewTicker(cfg.ReportInterval.D())
	defer tick.Stop()
	for {
		m.pollControl()
		if err := enc.Encode(m.sample()); err != nil {
			return fmt.Errorf("write sample: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// dialer connects at once the first time and, with a reconnect jitter,
// after a random wait every later time (go-zookeeper dials from one
// goroutine).
func (m *Mirror) dialer() zk.Dialer {
	j := m.cfg.ReconnectJitter.D()
	r := rand.New(rand.NewPCG(m.cfg.Seed, 0x7177e2))
	first := true
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if !first && j > 0 {
			if !lab.Sleep(m.ctx, time.Duration(r.Int64N(int64(j)))) {
				return nil, m.ctx.Err()
			}
		}
		first = false
		return net.DialTimeout(network, addr, timeout)
	}
}

func (m *Mirror) sample() Sample {
	s := Sample{
		UnixMS:     time.Now().UnixMilli(),
		ID:         m.cfg.ID,
		State:      m.state.Load().(string),
		Strategy:   m.strategy().name,
		SessionID:  m.sessionID.Load(),
		InFlight:   m.inflight.Load(),
		Queued:     m.queued.Load(),
		Completed:  m.completed.Load(),
		Errors:     m.errs.Load(),
		Reconnects: m.reconnects.Load(),
		Sessions:   m.sessions.Load(),
		Refreshes:  m.refreshes.Load(),
		Frontier:   m.frontier.Load(),
		Cancelled:  m.cancelled.Load(),
		RSSBytes:   rss(),
		Goroutines: numGoroutine(),
	}
	m.mu.Lock()
	s.Nodes = len(m.nodes)
	next := int64(math.MaxInt64)
	for _, e := range m.nodes {
		if e.idx >= 0 {
			s.HotKnown++
			next = min(next, NextWrite(e.seq, e.idx, m.cfg.HotCount))
		}
	}
	m.mu.Unlock()
	if s.HotKnown < m.cfg.HotCount || s.HotKnown == 0 {
		next = 1
	}
	s.NextSeq = next
	return s
}

func (m *Mirror) handleEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-m.events:
			m.handle(ev)
		}
	}
}

func (m *Mirror) handle(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		m.onSession(ev)
	case zk.EventNodeDataChanged:
		m.spawnRead(ev.Path, opData)
	case zk.EventNodeChildrenChanged:
		m.spawnRead(ev.Path, opChildren)
	case zk.EventNodeDeleted:
		m.mu.Lock()
		delete(m.nodes, ev.Path)
		m.mu.Unlock()
	}
}

func (m *Mirror) onSession(ev zk.Event) {
	switch ev.State {
	case zk.StateHasSession:
		id := m.conn.SessionID()
		prev := m.sessionID.Swap(id)
		resumed := prev == id
		m.state.Store("has-session")
		m.reconnects.Add(1)
		if !resumed {
			m.sessions.Add(1)
		}
		m.sessionMu.Lock()
		select {
		case <-m.sessionUp:
		default:
			close(m.sessionUp)
		}
		m.sessionMu.Unlock()
		m.log.Info("session", "resumed", resumed, "session", fmt.Sprintf("%#x", id), "server", ev.Server)
		switch {
		case prev == 0 && m.cfg.PacedStart && m.cfg.Incarnation == 0:
			m.startWalk() // the first load, paced (Client.PacedStart)
		case m.strategy().name == FullRefresh:
			// TreeCache refreshes the whole tree on every reconnect.
			m.refreshes.Add(1)
			go m.refreshNode(m.cfg.Root)
		case !resumed:
			m.startWalk()
		}
	case zk.StateDisconnected, zk.StateConnecting:
		m.markDown("disconnected")
	case zk.StateExpired:
		m.markDown("expired")
		if m.strategy().name == Paced {
			m.cancelWalk()
		}
	case zk.StateConnected:
		m.state.Store("connected")
	}
}

func (m *Mirror) markDown(state string) {
	m.state.Store(state)
	m.sessionMu.Lock()
	select {
	case <-m.sessionUp:
		m.sessionUp = make(chan struct{})
	default:
	}
	m.sessionMu.Unlock()
}

func (m *Mirror) waitSession(ctx context.Context) error {
	m.sessionMu.Lock()
	ch := m.sessionUp
	m.sessionMu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type op int

const (
	opData op = iota
	opChildren
)

// read issues one watched read and applies its result to the mirror; it
// returns the children for opChildren.
func (m *Mirror) read(p string, o op) ([]string, error) {
	m.inflight.Add(1)
	defer m.inflight.Add(-1)
	switch o {
	case opData:
		data, _, _, err := m.conn.GetW(p)
		if err != nil {
			m.errs.Add(1)
			return nil, err
		}
		m.completed.Add(1)
		m.apply(p, data)
		return nil, nil
	default:
		children, _, _, err := m.conn.ChildrenW(p)
		if err != nil {
			m.errs.Add(1)
			return nil, err
		}
		m.completed.Add(1)
		return children, nil
	}
}

func (m *Mirror) apply(p string, data []byte) {
	seq, idx := ParseData(data)
	m.mu.Lock()
	e := m.nodes[p]
	if e == nil {
		e = &entry{}
		m.nodes[p] = e
	}
	e.seq, e.idx, e.data = seq, idx, data
	m.mu.Unlock()
}

// readInWindow is read once one of the paced mirror's slots is free
// (counted as queued while it waits). The slots are not the walk's: a walk
// keeps its own Window reads in flight.
func (m *Mirror) readInWindow(p string, o op) ([]string, error) {
	m.queued.Add(1)
	slots := m.strategy().slots
	select {
	case slots <- struct{}{}:
		m.queued.Add(-1)
		defer func() { <-slots }()
	case <-m.ctx.Done():
		m.queued.Add(-1)
		return nil, m.ctx.Err()
	}
	return m.read(p, o)
}

// spawnRead follows a watch event. Both strategies re-read one znode per
// event; the full-refresh client does it without any bound, the paced one
// within its slots (readInWindow).
func (m *Mirror) spawnRead(p string, o op) {
	go func() {
		if m.strategy().name == FullRefresh {
			m.readRetry(p, o, true)
			return
		}
		for m.ctx.Err() == nil {
			children, err := m.readInWindow(p, o)
			if err == nil {
				for _, c := range children {
					if m.known(path.Join(p, c)) {
						continue
					}
					m.spawnRead(path.Join(p, c), opData)
					m.spawnRead(path.Join(p, c), opChildren)
				}
				return
			}
			if errors.Is(err, zk.ErrNoNode) || m.waitSession(m.ctx) != nil {
				return
			}
		}
	}()
}

func (m *Mirror) known(p string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.nodes[p]
	return ok
}

// refreshNode is TreeCache's refresh: getChildren and getData for the node,
// each child refreshed as soon as the children arrive, all concurrently.
func (m *Mirror) refreshNode(p string) {
	go m.readRetry(p, opData, false)
	children, ok := m.readRetry(p, opChildren, false)
	if !ok {
		return
	}
	for _, c := range children {
		go m.refreshNode(path.Join(p, c))
	}
}

// readRetry re-queues a failed read up to Retries times with exponential
// back-off (Curator's ExponentialBackoffRetry); nothing bounds how many wait.
func (m *Mirror) readRetry(p string, o op, _ bool) ([]string, bool) {
	for attempt := 0; ; attempt++ {
		children, err := m.read(p, o)
		if err == nil {
			return children, true
		}
		if errors.Is(err, zk.ErrNoNode) || attempt >= m.cfg.Retries || m.ctx.Err() != nil {
			return nil, false
		}
		m.queued.Add(1)
		sleep := m.cfg.RetryBase.D() * time.Duration(1+m.rndInt(1<<(attempt+1)))
		select {
		case <-time.After(sleep):
		case <-m.ctx.Done():
		}
		m.queued.Add(-1)
	}
}

func (m *Mirror) rndInt(n int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rnd.IntN(n)
}

func (m *Mirror) cancelWalk() {
	m.walkMu.Lock()
	defer m.walkMu.Unlock()
	if m.walkCancel != nil {
		m.walkCancel()
		m.walkCancel = nil
		m.cancelled.Add(1)
	}
}

// startWalk begins a paced walk of the tree for a new session, cancelling
// any walk of an earlier session.
func (m *Mirror) startWalk() {
	m.cancelWalk()
	m.walkMu.Lock()
	ctx, cancel := context.WithCancel(m.ctx)
	m.walkCancel = cancel
	m.walkMu.Unlock()
	m.refreshes.Add(1)
	sid := m.sessionID.Load()
	go func() {
		m.walk(ctx, sid)
		m.walkMu.Lock()
		cancel()
		m.walkMu.Unlock()
	}()
}

type task struct {
	path string
	o    op
}

// walk visits every znode with at most Window reads in flight.
func (m *Mirror) walk(ctx context.Context, sid int64) {
	var (
		mu      sync.Mutex
		queue   = []task{{m.cfg.Root, opData}, {m.cfg.Root, opChildren}}
		active  int
		cond    = sync.NewCond(&mu)
		stopped bool
	)
	m.frontier.Add(2)
	go func() {
		<-ctx.Done()
		mu.Lock()
		stopped = true
		cond.Broadcast()
		mu.Unlock()
	}()
	worker := func() {
		for {
			mu.Lock()
			for len(queue) == 0 && active > 0 && !stopped {
				cond.Wait()
			}
			if stopped || (len(queue) == 0 && active == 0) {
				cond.Broadcast()
				mu.Unlock()
				return
			}
			t := queue[0]
			queue = queue[1:]
			active++
			mu.Unlock()
			m.frontier.Add(-1)

			var children []string
			for {
				var err error
				children, err = m.read(t.path, t.o)
				if err == nil || errors.Is(err, zk.ErrNoNode) {
					break
				}
				// Wait for the session to come back; a new session
				// means this walk is cancelled.
				if m.waitSession(ctx) != nil || m.sessionID.Load() != sid {
					break
				}
			}
			mu.Lock()
			active--
			for _, c := range children {
				cp := path.Join(t.path, c)
				queue = append(queue, task{cp, opData}, task{cp, opChildren})
				m.frontier.Add(2)
			}
			cond.Broadcast()
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for range m.strategy().window {
		wg.Add(1)
		go func() { defer wg.Done(); worker() }()
	}
	wg.Wait()
	mu.Lock()
	m.frontier.Add(-int64(len(queue)))
	mu.Unlock()
}

// FormatData is the content the harness writes into a znode: a header with
// the write sequence and, for a hot znode, its place in the writer's round
// robin (idx, -1 when not hot), padded to size bytes.
func FormatData(seq int64, idx int, size int) []byte {
	head := fmt.Sprintf("seq=%d idx=%d\n", seq, idx)
	if size < len(head) {
		size = len(head)
	}
	b := make([]byte, size)
	copy(b, head)
	for i := len(head); i < size; i++ {
		b[i] = 'x'
	}
	return b
}

// ParseData reads the header written by FormatData.
func ParseData(b []byte) (seq int64, idx int) {
	idx = -1
	line, _, _ := strings.Cut(string(b[:min(len(b), 64)]), "\n")
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "seq":
			seq, _ = strconv.ParseInt(v, 10, 64)
		case "idx":
			if n, err := strconv.Atoi(v); err == nil {
				idx = n
			}
		}
	}
	return seq, idx
}

// NextWrite is the sequence number of the next write a hot znode receives
// after the one it holds: the writer sends write number s to hot[(s-1) %
// hotCount], so the znode at idx first gets idx+1 and then every hotCount.
func NextWrite(held int64, idx, hotCount int) int64 {
	if held == 0 {
		return int64(idx) + 1
	}
	return held + int64(hotCount)
}

type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) { z.l.Info(fmt.Sprintf(format, args...)) }
