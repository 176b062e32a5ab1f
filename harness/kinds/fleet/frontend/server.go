// Package frontend is the front-end server of the IL-0384 replay: a stand-in
// for an Amazon Kinesis front-end server. It registers in etcd (lease plus
// key: the membership service), reads the shard table from etcd (the
// configuration store), keeps a connection to every peer of its cell over
// which peers exchange their shard-maps, and routes requests on loopback
// only while its shard-map is complete: the table is loaded and every peer
// it knows of has synced and is heard from.
//
// With PeerThreads "per-peer" every peer connection is served by a goroutine
// locked to an OS thread of its own (runtime.LockOSThread), as the incident's
// servers kept one thread per peer: threads grow with the fleet, and when the
// operating system refuses a new thread the Go runtime does what it does
// (it aborts the process: "failed to create new OS thread"). With "pool" the
// connections are read by ordinary goroutines and the messages are decoded
// by a fixed pool of locked threads, so the thread count does not depend on
// the fleet's size.
package frontend

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Peer-thread modes.
const (
	PerPeer = "per-peer"
	Pool    = "pool"
)

// Bootstrap sources.
const (
	FromPeers = "peers"
	FromStore = "store"
)

// Settings are a front-end server's own settings, declared once: part of
// a kinesis-frontend workload's settings in a scenario, and of each
// server's Config.
type Settings struct {
	// PeerThreads is per-peer (one goroutine locked to an OS thread for
	// every peer: the incident) or pool (PoolThreads threads, whatever the
	// fleet's size).
	PeerThreads string `yaml:"peer_threads" json:"peer_threads"`
	// PoolThreads sizes the pool.
	PoolThreads int `yaml:"pool_threads" json:"pool_threads"`
	// CellSize > 0 splits the fleet into cells of that many servers by
	// index; a server only peers inside its cell (0: one cell).
	CellSize int `yaml:"cell_size" json:"cell_size"`
	// Bootstrap is where a starting server gets the shard table: peers
	// (every peer sends its full shard-map, the store only when no peer
	// answers within BootstrapTimeout: the incident) or store (etcd, the
	// action item; peers then send digests).
	Bootstrap string `yaml:"bootstrap" json:"bootstrap"`
	// BootstrapTimeout: with bootstrap peers, how long a server waits for
	// a peer's shard-map before it reads the store.
	BootstrapTimeout lab.Duration `yaml:"bootstrap_timeout" json:"bootstrap_timeout"`
	// LearnSpread: a running server learns of a new member after a random
	// delay up to this (the incident: up to an hour; scaled down).
	LearnSpread lab.Duration `yaml:"learn_spread" json:"learn_spread"`
	// Heartbeat is the peer message interval; a peer silent for 3 of them
	// makes the shard-map incomplete.
	Heartbeat lab.Duration `yaml:"heartbeat" json:"heartbeat"`
	// LeaseTTL is the membership lease in etcd (whole seconds): a server
	// that dies without leaving stays a member this long.
	LeaseTTL lab.Duration `yaml:"lease_ttl" json:"lease_ttl"`
}

// DefaultSettings are a front-end server's defaults.
func DefaultSettings() Settings {
	return Settings{PeerThreads: PerPeer, PoolThreads: 4, Bootstrap: FromPeers, BootstrapTimeout: lab.Duration(3 * time.Second),
		Heartbeat: lab.Duration(time.Second), LeaseTTL: lab.Duration(3 * time.Second)}
}

// MaxPoolThreads bounds a pool of peer threads.
const MaxPoolThreads = 1000

// Check validates a server's settings.
func (s Settings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(s.PeerThreads == PerPeer || s.PeerThreads == Pool, "peer_threads", "want %s or %s, got %q", PerPeer, Pool, s.PeerThreads)
	c.Need(s.PoolThreads >= 1, "pool_threads", "want at least 1, got %d", s.PoolThreads)
	c.Need(s.PoolThreads <= MaxPoolThreads, "pool_threads", "%d is more than %d: a pool that size is no bound (and more threads than a server's thread limit allows)", s.PoolThreads, MaxPoolThreads)
	c.Need(s.CellSize >= 0, "cell_size", "want >= 0 (0 is one cell), got %d", s.CellSize)
	c.Need(s.Bootstrap == FromPeers || s.Bootstrap == FromStore, "bootstrap", "want %s or %s, got %q", FromPeers, FromStore, s.Bootstrap)
	c.Msg("bootstrap_timeout", lab.CheckDuration(s.BootstrapTimeout, time.Millisecond, "the least wait for a peer's shard-map"))
	c.Msg("learn_spread", lab.CheckDuration(s.LearnSpread, 0, ""))
	c.Msg("heartbeat", lab.CheckDuration(s.Heartbeat, 10*time.Millisecond, "faster peer messages busy every server with heartbeats alone"))
	c.Msg("lease_ttl", lab.CheckDuration(s.LeaseTTL, time.Second, "etcd's leases are whole seconds"))
	return c
}

// Config of one front-end server: the JSON document its agent gets.
type Config struct {
	Settings
	ID    string   `json:"id"`
	Index int      `json:"index"` // 1-based position in the fleet; decides the cell
	Etcd  []string `json:"etcd"`
	// Prefix is the etcd prefix of the fleet (members/, shards/ below it).
	Prefix string `json:"prefix"`
	// ListenHost is the address to listen on (127.0.0.1; 0.0.0.0 in a
	// container); ports are picked by the kernel and printed on stdout.
	ListenHost string `json:"listen_host"`
	// Advertise is the host peers dial (default: ListenHost; "auto": the
	// first IPv4 address of a non-loopback interface).
	Advertise string `json:"advertise"`
	// Incarnation counts the server's restarts (0 first); its
	// registration carries it, so a reader can tell it from an earlier
	// incarnation's.
	Incarnation int          `json:"incarnation"`
	Seed        uint64       `json:"seed"`
	Logger      *slog.Logger `json:"-"`
	// OnListen, when set, gets the bound addresses.
	OnListen func(peer, route string) `json:"-"`
}

func (c *Config) defaults() error {
	if c.ID == "" || c.Index < 1 {
		return errors.New("front-end: id and index (>= 1) required")
	}
	if len(c.Etcd) == 0 {
		return errors.New("front-end: etcd endpoints required")
	}
	if ps := c.Settings.Check(); len(ps) > 0 {
		return fmt.Errorf("front-end: %s: %s", ps[0].Field, ps[0].Msg)
	}
	if c.Prefix == "" {
		c.Prefix = "/chaoslab/kinesis"
	}
	if c.ListenHost == "" {
		c.ListenHost = "127.0.0.1"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return nil
}

// Cell returns the cell of the server at index (1-based).
func Cell(index, cellSize int) int {
	if cellSize <= 0 {
		return 0
	}
	return (index - 1) / cellSize
}

// Member is a registration in the membership service.
type Member struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
	Cell  int    `json:"cell"`
	Peer  string `json:"peer"`
	Route string `json:"route"`
	// Incarnation is the registering incarnation's (Config.Incarnation).
	Incarnation int `json:"incarnation"`
}

// Status is what /status answers.
type Status struct {
	ID          string  `json:"id"`
	Ready       bool    `json:"ready"`
	Table       bool    `json:"table"`
	TableFrom   string  `json:"table_from,omitempty"`
	PeersKnown  int     `json:"peers_known"`
	PeersSynced int     `json:"peers_synced"`
	Threads     int     `json:"threads"`
	Cell        int     `json:"cell"`
	Mode        string  `json:"mode"`
	UptimeS     float64 `json:"uptime_s"`
	ReadyAfterS float64 `json:"ready_after_s,omitempty"`
	Routed      int64   `json:"routed"`
	Refused     int64   `json:"refused"`
	// Waiting names (up to 5) peers the shard-map waits for, and why.
	Waiting []string `json:"waiting,omitempty"`
}

type peer struct {
	m      Member
	cancel context.CancelFunc
	// ready is what the peer last said of itself: a peer still building
	// its own shard-map has nothing to contribute yet.
	ready    bool
	synced   bool
	learned  time.Time
	digest   string
	lastSeen time.Time
}

// Server is one running front-end server.
type Server struct {
	cfg   Config
	log   *slog.Logger
	cli   *clientv3.Client
	start time.Time
	cell  int

	mu        sync.Mutex
	table     Table
	digest    string
	tableFrom string
	readyAt   time.Time
	peers     map[string]*peer
	routed    int64
	refused   int64
	// tableCh is closed when the table is loaded.
	tableCh chan struct{}

	work chan func() // pool mode: decode jobs for the locked pool threads
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, start: time.Now(), cell: Cell(cfg.Index, cfg.CellSize),
		peers: map[string]*peer{}, tableCh: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	peerLn, err := net.Listen("tcp", net.JoinHostPort(cfg.ListenHost, "0"))
	if err != nil {
		return fmt.Errorf("listen for peers: %w", err)
	}
	defer peerLn.Close()
	routeLn, err := net.Listen("tcp", net.JoinHostPort(cfg.ListenHost, "0"))
	if err != nil {
		return fmt.Errorf("listen for requests: %w", err)
	}
	defer routeLn.Close()
	if cfg.OnListen != nil {
		cfg.OnListen(peerLn.Addr().String(), routeLn.Addr().String())
	}
	host := cfg.Advertise
	if host == "auto" {
		if host, err = ownAddress(); err != nil {
			return err
		}
	}
	adv := func(a net.Addr) string {
		h, port, _ := net.SplitHostPort(a.String())
		if host != "" {
			h = host
		}
		return net.JoinHostPort(h, port)
	}
	me := Member{ID: cfg.ID, Index: cfg.Index, Cell: s.cell, Peer: adv(peerLn.Addr()), Route: adv(routeLn.Addr()), Incarnation: cfg.Incarnation}

	if cfg.PeerThreads == Pool {
		s.work = make(chan func(), 1024)
		for range cfg.PoolThreads {
			go s.poolThread(ctx)
		}
	}

	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(routeLn) }()
	defer srv.Close()
	go s.acceptPeers(ctx, peerLn)

	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Etcd, DialTimeout: 5 * time.Second, Logger: nopZap()})
	if err != nil {
		return fmt.Errorf("connect etcd: %w", err)
	}
	defer cli.Close()
	s.cli = cli

	lease, err := s.register(ctx, me)
	if err != nil {
		return err
	}
	defer func() {
		// Leave the membership at once rather than when the lease expires.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_, _ = cli.Revoke(rctx, lease)
		cancel()
	}()
	s.log.Info("registered", "id", me.ID, "cell", me.Cell, "peer", me.Peer, "route", me.Route,
		"peer_threads", cfg.PeerThreads, "bootstrap", cfg.Bootstrap)
	go s.bootstrap(ctx)
	go s.reportReady(ctx)
	err = s.watchMembers(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// register puts the member key under a lease kept alive until ctx ends.
func (s *Server) register(ctx context.Context, me Member) (clientv3.LeaseID, error) {
	lease, err := s.cli.Grant(ctx, int64(math.Ceil(s.cfg.LeaseTTL.D().Seconds())))
	if err != nil {
		return 0, fmt.Errorf("grant lease: %w", err)
	}
	b, _ := json.Marshal(me)
	if _, err := s.cli.Put(ctx, MembersPrefix(s.cfg.Prefix)+me.ID, string(b), clientv3.WithLease(lease.ID)); err != nil {
		return 0, fmt.Errorf("register member: %w", err)
	}
	ka, err := s.cli.KeepAlive(ctx, lease.ID)
	if err != nil {
		return 0, fmt.Errorf("keep lease alive: %w", err)
	}
	go func() {
		for range ka {
		}
		if ctx.Err() == nil {
			s.log.Error("membership lease lost")
		}
	}()
	return lease.ID, nil
}

// bootstrap loads the shard table: from the store, or from the first peer
// whose full shard-map arrives within BootstrapTimeout (else the store).
func (s *Server) bootstrap(ctx context.Context) {
	if s.cfg.Bootstrap == FromPeers {
		select {
		case <-s.tableCh:
			return
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.BootstrapTimeout.D()):
		}
		s.log.Info("no peer sent its shard-map in time; reading the table from the store", "after", s.cfg.BootstrapTimeout.D())
	}
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t, err := LoadStore(lctx, s.cli, s.cfg.Prefix)
		cancel()
		if err == nil {
			s.setTable(t, "store")
			return
		}
		s.log.Warn("read shard table", "err", err)
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

func (s *Server) setTable(t Table, from string) bool {
	d := t.Digest()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table != nil {
		return false
	}
	s.table, s.digest, s.tableFrom = t, d, from
	close(s.tableCh)
	s.log.Info("shard table loaded", "from", from, "shards", len(t), "digest", d)
	return true
}

// watchMembers learns the fleet: the members present at start at once, the
// ones that join later after a random delay up to LearnSpread.
func (s *Server) watchMembers(ctx context.Context) error {
	r := rand.New(rand.NewPCG(s.cfg.Seed, uint64(s.cfg.Index)))
	prefix := MembersPrefix(s.cfg.Prefix)
	resp, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("read members: %w", err)
	}
	for _, kv := range resp.Kvs {
		s.memberUp(ctx, kv.Value, 0)
	}
	wch := s.cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	for wr := range wch {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("watch members: %w", err)
		}
		for _, ev := range wr.Events {
			id := strings.TrimPrefix(string(ev.Kv.Key), prefix)
			if ev.Type == clientv3.EventTypeDelete {
				s.memberDown(id)
				continue
			}
			var delay time.Duration
			if s.cfg.LearnSpread.D() > 0 {
				delay = time.Duration(r.Int64N(int64(s.cfg.LearnSpread.D())))
			}
			s.memberUp(ctx, ev.Kv.Value, delay)
		}
	}
	return ctx.Err()
}

func (s *Server) memberUp(ctx context.Context, v []byte, delay time.Duration) {
	m, ok := s.member(v)
	if !ok {
		return
	}
	if delay <= 0 {
		s.learn(ctx, m)
		return
	}
	time.AfterFunc(delay, func() {
		// Learn only if it is still a member, as it is registered now.
		if ctx.Err() != nil {
			return
		}
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := s.cli.Get(gctx, MembersPrefix(s.cfg.Prefix)+m.ID)
		cancel()
		if err == nil && len(resp.Kvs) > 0 {
			if now, ok := s.member(resp.Kvs[0].Value); ok {
				s.learn(ctx, now)
			}
		}
	})
}

// member reads a registration; ok when it is a peer: another server of
// this server's cell.
func (s *Server) member(v []byte) (Member, bool) {
	var m Member
	if err := json.Unmarshal(v, &m); err != nil || m.ID == "" || m.ID == s.cfg.ID || m.Cell != s.cell {
		return Member{}, false
	}
	return m, true
}

// learn starts talking to peer m. A peer already known under another
// registration (a new incarnation, whose earlier one was killed before
// its lease ran out: no delete came between) is dropped first, its
// thread with it: the earlier address is gone.
func (s *Server) learn(ctx context.Context, m Member) {
	s.mu.Lock()
	if ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	if old, ok := s.peers[m.ID]; ok {
		if old.m == m {
			s.mu.Unlock()
			return
		}
		old.cancel()
		delete(s.peers, m.ID)
		s.log.Info("peer registered again", "peer", m.ID, "incarnation", m.Incarnation, "was", old.m.Incarnation)
	}
	pctx, cancel := context.WithCancel(ctx)
	s.peers[m.ID] = &peer{m: m, cancel: cancel, learned: time.Now()}
	n := len(s.peers)
	s.mu.Unlock()
	s.log.Info("peer learned", "peer", m.ID, "peers", n)
	if s.cfg.PeerThreads == PerPeer {
		go s.peerThread(pctx, m)
	} else {
		go s.peerReader(pctx, m)
	}
}

func (s *Server) memberDown(id string) {
	s.mu.Lock()
	p, ok := s.peers[id]
	delete(s.peers, id)
	n := len(s.peers)
	s.mu.Unlock()
	if ok {
		p.cancel()
		s.log.Info("peer gone", "peer", id, "peers", n)
	}
}

// peerThread is the incident's design: one OS thread per peer for as long
// as the peer is known. The goroutine never unlocks, so its thread ends
// with it.
func (s *Server) peerThread(ctx context.Context, m Member) {
	runtime.LockOSThread()
	s.peerLoop(ctx, m, func(msg []byte) { s.handlePeerMsg(m, msg) })
}

// peerReader is the mitigation: an ordinary goroutine reads the connection
// and a bounded pool of threads decodes.
func (s *Server) peerReader(ctx context.Context, m Member) {
	s.peerLoop(ctx, m, func(msg []byte) {
		select {
		case s.work <- func() { s.handlePeerMsg(m, msg) }:
		case <-ctx.Done():
		}
	})
}

func (s *Server) poolThread(ctx context.Context) {
	runtime.LockOSThread()
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-s.work:
			job()
		}
	}
}

// peerLoop dials the peer, asks for its shard-map (full when bootstrapping
// from peers, else a digest) and hands every message to handle, redialling
// until ctx ends.
func (s *Server) peerLoop(ctx context.Context, m Member, handle func([]byte)) {
	full := s.cfg.Bootstrap == FromPeers
	for ctx.Err() == nil {
		d := net.Dialer{Timeout: 2 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", m.Peer)
		if err != nil {
			sleepCtx(ctx, 500*time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		req, _ := json.Marshal(peerMsg{Op: "sync", From: s.cfg.ID, Full: full})
		_, err = conn.Write(append(req, '\n'))
		if err == nil {
			rd := bufio.NewReaderSize(conn, 64<<10)
			for {
				_ = conn.SetReadDeadline(time.Now().Add(5 * s.cfg.Heartbeat.D()))
				line, err := rd.ReadBytes('\n')
				if err != nil {
					break
				}
				handle(line)
			}
		}
		stop()
		conn.Close()
		s.mu.Lock()
		if p := s.peers[m.ID]; p != nil && p.m == m {
			p.synced = false
		}
		s.mu.Unlock()
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

type peerMsg struct {
	Op     string `json:"op"` // sync (request or reply), hb
	From   string `json:"from,omitempty"`
	Full   bool   `json:"full,omitempty"`
	Ready  bool   `json:"ready,omitempty"`
	Digest string `json:"digest,omitempty"`
	Table  Table  `json:"table,omitempty"`
}

// handlePeerMsg decodes one message of a peer: the shard-map work that runs
// on the peer's thread (or a pool thread).
func (s *Server) handlePeerMsg(m Member, line []byte) {
	id := m.ID
	var msg peerMsg
	if err := json.Unmarshal(line, &msg); err != nil {
		s.log.Warn("bad peer message", "peer", id, "err", err)
		return
	}
	if msg.Op == "sync" && len(msg.Table) > 0 {
		if err := msg.Table.Valid(); err != nil {
			s.log.Warn("peer sent a broken shard-map", "peer", id, "err", err)
			return
		}
		if s.setTable(msg.Table, "peer "+id) {
			msg.Digest = msg.Table.Digest()
		} else {
			msg.Digest = msg.Table.Digest() // recomputed: the cross-check of a peer's map
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[id]
	if p == nil || p.m != m { // an earlier registration's late message
		return
	}
	p.lastSeen = time.Now()
	p.ready = msg.Ready
	if msg.Op == "sync" && msg.Ready {
		p.digest = msg.Digest
		p.synced = true
	}
}

// acceptPeers serves the peers that dial this server: a sync reply once this
// server has its table, then a heartbeat every interval.
func (s *Server) acceptPeers(ctx context.Context, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go s.servePeer(ctx, conn)
	}
}

func (s *Server) servePeer(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	rd := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var req peerMsg
	if json.Unmarshal(line, &req) != nil || req.Op != "sync" {
		return
	}
	// Heartbeats until this server has a table; then the sync reply.
	tick := time.NewTicker(s.cfg.Heartbeat.D())
	defer tick.Stop()
	enc := json.NewEncoder(conn)
	if enc.Encode(peerMsg{Op: "hb"}) != nil {
		return
	}
	for {
		select {
		case <-s.tableCh:
		case <-tick.C:
			if enc.Encode(peerMsg{Op: "hb"}) != nil {
				return
			}
			continue
		case <-ctx.Done():
			return
		}
		break
	}
	s.mu.Lock()
	reply := peerMsg{Op: "sync", Ready: true, Digest: s.digest}
	if req.Full {
		reply.Table = s.table
	}
	s.mu.Unlock()
	if enc.Encode(reply) != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.mu.Lock()
			d := s.digest
			s.mu.Unlock()
			if enc.Encode(peerMsg{Op: "hb", Ready: true, Digest: d}) != nil {
				return
			}
		}
	}
}

// joinGrace is how long a server that already routes keeps routing while a
// newly learned peer has not been heard from yet (it may still be starting).
const joinGrace = 10

// readyLocked reports whether the shard-map is complete: the table is
// loaded, every known peer was heard from within 3 heartbeats, and every
// peer that has its own shard-map sent it (or its digest) and agrees. Once
// the server has routed, a peer it learned less than joinGrace heartbeats
// ago and never heard from does not count yet. It also counts the peers
// that count as synced.
func (s *Server) readyLocked(now time.Time) (ready bool, synced int) {
	ok := s.table != nil
	for _, p := range s.peers {
		heard := !p.lastSeen.IsZero() && now.Sub(p.lastSeen) <= 3*s.cfg.Heartbeat.D()
		joining := p.lastSeen.IsZero() && !s.readyAt.IsZero() && now.Sub(p.learned) < joinGrace*s.cfg.Heartbeat.D()
		good := joining || heard && (!p.ready || (p.synced && p.digest == s.digest))
		if good {
			synced++
		} else {
			ok = false
		}
	}
	return ok, synced
}

func (s *Server) reportReady(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			ok, _ := s.readyLocked(now)
			first := ok && s.readyAt.IsZero()
			if first {
				s.readyAt = now
			}
			n := len(s.peers)
			s.mu.Unlock()
			if first {
				s.log.Info("shard-map complete: routing", "after", now.Sub(s.start).Round(time.Millisecond), "peers", n, "threads", Threads())
			}
		}
	}
}

func (s *Server) status() Status {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ready, synced := s.readyLocked(now)
	st := Status{ID: s.cfg.ID, Ready: ready, Table: s.table != nil, TableFrom: s.tableFrom,
		PeersKnown: len(s.peers), PeersSynced: synced, Threads: Threads(), Cell: s.cell,
		Mode: s.cfg.PeerThreads + "/" + s.cfg.Bootstrap, UptimeS: now.Sub(s.start).Seconds(),
		Routed: s.routed, Refused: s.refused}
	if !s.readyAt.IsZero() {
		st.ReadyAfterS = s.readyAt.Sub(s.start).Seconds()
	}
	for id, p := range s.peers {
		if len(st.Waiting) >= 5 {
			break
		}
		switch {
		case p.lastSeen.IsZero():
			st.Waiting = append(st.Waiting, id+" (never heard)")
		case now.Sub(p.lastSeen) > 3*s.cfg.Heartbeat.D():
			st.Waiting = append(st.Waiting, fmt.Sprintf("%s (silent %.0fs)", id, now.Sub(p.lastSeen).Seconds()))
		case p.ready && !p.synced:
			st.Waiting = append(st.Waiting, id+" (ready, no shard-map yet)")
		case p.ready && p.digest != s.digest:
			st.Waiting = append(st.Waiting, id+" (shard-map differs)")
		}
	}
	sort.Strings(st.Waiting)
	return st
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /route", func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Query().Get("key")
		now := time.Now()
		s.mu.Lock()
		ready, synced := s.readyLocked(now)
		t, known := s.table, len(s.peers)
		if ready {
			s.routed++
		} else {
			s.refused++
		}
		s.mu.Unlock()
		if !ready {
			http.Error(w, fmt.Sprintf("shard-map incomplete: table %v, %d of %d peers synced", t != nil, synced, known), http.StatusServiceUnavailable)
			return
		}
		sh, ok := t.Route(key)
		if !ok {
			http.Error(w, "no shard for key", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, `{"shard":%d,"cell":%q}`+"\n", sh.ID, sh.Cell)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.status())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if !s.status().Ready {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// ownAddress is the first IPv4 address of a non-loopback interface: what
// peers dial when the server runs in a container (no name lookup needed).
func ownAddress() (string, error) {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("find own address: %w", err)
	}
	for _, a := range ifs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String(), nil
		}
	}
	return "", errors.New("find own address: no non-loopback IPv4 address")
}

// Threads is this process's OS thread count (/proc/self/status).
func Threads() int {
	n, _ := ProcThreads(os.Getpid())
	return n
}

// ProcThreads reads the Threads: line of /proc/<pid>/status.
func ProcThreads(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no Threads line in /proc/%d/status", pid)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
