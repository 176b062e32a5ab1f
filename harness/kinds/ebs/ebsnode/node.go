package ebsnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
)

// Config is one node process's (chaoslab agent ebs-node --config JSON).
type Config struct {
	Settings `yaml:",inline"`
	ID       string `json:"id"`
	Zone     string `json:"zone"`
	Dir      string `json:"dir"`
	Listen   string `json:"listen"`
	// MirrorPort is where the node takes its primaries' mirror traffic;
	// 0 (the harness's choice) lets the kernel pick a free one, which
	// OnListen reports: a port picked ahead and freed could be taken by
	// any socket before the node binds it.
	MirrorPort int `json:"mirror_port"`
	// Control is the control plane's API (http://host:port).
	Control string `json:"control"`
	// ControlTimeout bounds the node's wait for one API call.
	ControlTimeout time.Duration `json:"control_timeout"`
	// Peers are where this node reaches each node's mirror port (the
	// fault proxy in front of it).
	Peers map[string]string `json:"peers"`
	// Volumes are the volumes it is primary for, with their first mirror.
	Volumes []VolumeConfig `json:"volumes"`
	Seed    uint64         `json:"seed"`
	// OnListen is called with the status API's address and the mirror
	// listener's.
	OnListen func(status, mirror string) `json:"-"`
	Logger   *slog.Logger                `json:"-"`
}

// VolumeConfig is a volume the node is primary for.
type VolumeConfig struct {
	ID     string `json:"id"`
	Mirror string `json:"mirror"`
}

// Status is a node's figures (GET /status).
type Status struct {
	ID          string `json:"id"`
	Zone        string `json:"zone"`
	Volumes     int    `json:"volumes"`
	Live        int    `json:"live"`
	Stuck       int    `json:"stuck"`
	Searches    int64  `json:"searches"`
	SearchFails int64  `json:"search_fails"`
	Remirrors   int64  `json:"remirrors"`
	CopyFails   int64  `json:"copy_fails"`
	Writes      int64  `json:"writes"`
	Blocked     int64  `json:"blocked"`
	Replicas    int64  `json:"replicas"`
}

// node is one running node.
type node struct {
	cfg  Config
	ctl  ebscontrol.Client
	reps *replicas
	vols []*volume
	log  *slog.Logger

	searches, searchFails, remirrors, copyFails, writes, blocked atomic.Int64
}

// Run starts the node and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("make folder: %w", err)
	}
	n := &node{cfg: cfg, log: cfg.Logger, reps: &replicas{dir: cfg.Dir, files: map[string]*os.File{}},
		ctl: ebscontrol.Client{Base: cfg.Control, HTTP: &http.Client{}}}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	defer n.reps.close()
	ml, err := net.Listen("tcp", net.JoinHostPort(cfg.Listen, strconv.Itoa(cfg.MirrorPort)))
	if err != nil {
		return fmt.Errorf("listen mirror: %w", err)
	}
	defer ml.Close()
	go n.acceptMirrors(ml)
	for i, vc := range cfg.Volumes {
		v, err := n.newVolume(vc, cfg.Seed+uint64(i))
		if err != nil {
			return err
		}
		n.vols = append(n.vols, v)
	}
	sl, err := net.Listen("tcp", net.JoinHostPort(cfg.Listen, "0"))
	if err != nil {
		return fmt.Errorf("listen status: %w", err)
	}
	srv := &http.Server{Handler: n.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close(); _ = ml.Close() }()
	var wg sync.WaitGroup
	for _, v := range n.vols {
		wg.Go(func() { v.run(ctx) })
	}
	if cfg.OnListen != nil {
		cfg.OnListen(sl.Addr().String(), ml.Addr().String())
	}
	err = srv.Serve(sl)
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve status: %w", err)
	}
	return nil
}

func (n *node) acceptMirrors(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go n.reps.serve(c, n.cfg.VolumeKiB*1024)
	}
}

func (n *node) handler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(n.status())
	})
	m.HandleFunc("GET /volumes/{id}", n.read)
	m.HandleFunc("PUT /volumes/{id}", n.write)
	return m
}

func (n *node) status() Status {
	st := Status{ID: n.cfg.ID, Zone: n.cfg.Zone, Volumes: len(n.vols), Searches: n.searches.Load(),
		SearchFails: n.searchFails.Load(), Remirrors: n.remirrors.Load(), CopyFails: n.copyFails.Load(),
		Writes: n.writes.Load(), Blocked: n.blocked.Load(), Replicas: n.reps.held.Load()}
	for _, v := range n.vols {
		if v.isLive() {
			st.Live++
		} else {
			st.Stuck++
		}
	}
	return st
}

func (n *node) volume(id string) *volume {
	for _, v := range n.vols {
		if v.id == id {
			return v
		}
	}
	return nil
}

// read serves a block of a volume the node is primary for; a stuck
// volume does not answer (503), as an instance's I/O blocks.
func (n *node) read(w http.ResponseWriter, r *http.Request) {
	v := n.volume(r.PathValue("id"))
	if v == nil {
		http.Error(w, "not primary for this volume", http.StatusNotFound)
		return
	}
	if !v.isLive() {
		http.Error(w, "volume stuck: re-mirroring", http.StatusServiceUnavailable)
		return
	}
	off, _ := strconv.ParseInt(r.URL.Query().Get("off"), 10, 64)
	buf := make([]byte, n.cfg.WriteBytes)
	k, err := v.file.ReadAt(buf, off)
	if k == 0 && err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = w.Write(buf[:k])
}

// write applies a block and mirrors it before answering.
func (n *node) write(w http.ResponseWriter, r *http.Request) {
	v := n.volume(r.PathValue("id"))
	if v == nil {
		http.Error(w, "not primary for this volume", http.StatusNotFound)
		return
	}
	off, _ := strconv.ParseInt(r.URL.Query().Get("off"), 10, 64)
	buf := make([]byte, n.cfg.WriteBytes)
	k, _ := r.Body.Read(buf)
	if err := v.write(off, buf[:k]); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// rng is the node's random source for one volume.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0xEB5)) }
