package runner

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// serverSample is one mntr reading of one member.
type serverSample struct {
	t           float64
	member      string
	state       string
	outstanding float64
	avgLatency  float64
	maxLatency  float64
	conns       float64
	ok          bool
}

// serverSampler asks every member for mntr on a fixed period, each with a
// deadline (a paused server does not answer).
type serverSampler struct {
	ens   zkCluster
	clock func(time.Time) float64
	every time.Duration

	mu      sync.Mutex
	samples []serverSample
	peak    float64
}

func (s *serverSampler) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for _, m := range s.ens.Members() {
			if !m.Running() || m.Paused() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				at := time.Now()
				mctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
				kv, err := m.Mntr(mctx)
				cancel()
				smp := serverSample{t: s.clock(at), member: m.Name(), ok: err == nil}
				if err == nil {
					smp.state = kv["zk_server_state"]
					smp.outstanding = num(kv["zk_outstanding_requests"])
					smp.avgLatency = num(kv["zk_avg_latency"])
					smp.maxLatency = num(kv["zk_max_latency"])
					smp.conns = num(kv["zk_num_alive_connections"])
				}
				s.mu.Lock()
				s.samples = append(s.samples, smp)
				s.peak = max(s.peak, smp.outstanding)
				s.mu.Unlock()
			}()
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *serverSampler) snapshot() (peak float64, states map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	states = map[string]string{}
	for i := len(s.samples) - 1; i >= 0 && len(states) < len(s.ens.Members()); i-- {
		if _, ok := states[s.samples[i].member]; !ok {
			st := s.samples[i].state
			if !s.samples[i].ok {
				st = "no answer"
			}
			states[s.samples[i].member] = st
		}
	}
	return s.peak, states
}

func num(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return v
}

// progress logs a line every few seconds so a long run shows where it is.
type progress struct {
	v       *variantRun
	clients []*client
	srv     *serverSampler
}

func newProgress(v *variantRun, clients []*client, srv *serverSampler) *progress {
	return &progress{v: v, clients: clients, srv: srv}
}

func (p *progress) run(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	total := p.v.s.RunLength()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		el := time.Since(p.v.t0).Round(time.Second)
		alive, ooms, pending, rss := 0, 0, int64(0), 0.0
		for _, c := range p.clients {
			c.mu.Lock()
			if c.alive {
				alive++
			}
			ooms += c.sum.OOMKills
			if n := len(c.samples); n > 0 {
				s := c.samples[n-1].s
				pending += s.InFlight + s.Queued
				rss = max(rss, float64(s.RSSBytes)/(1<<20))
			}
			c.mu.Unlock()
		}
		peak, states := p.srv.snapshot()
		var st []string
		for _, m := range p.v.s.Topology.ZooKeeper.ServersNames() {
			st = append(st, m+"="+states[m])
		}
		p.v.log.Info(fmt.Sprintf("progress %s/%s", el, total.Round(time.Second)),
			"clients_alive", fmt.Sprintf("%d/%d", alive, len(p.clients)), "oom_kills", ooms,
			"client_pending", pending, "max_rss_mb", fmt.Sprintf("%.0f", rss),
			"peak_outstanding", peak, "servers", strings.Join(st, " "))
	}
}

func javaVersion() (string, error) {
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}
