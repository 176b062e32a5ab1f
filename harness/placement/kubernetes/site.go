package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/netcut"
	"github.com/chaoslab/chaoslab/harness/infra/sockets"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Site is one variant's namespace and the pods started in it.
type Site struct {
	p     *Placement
	k     kubectl
	runID string
	ns    string
	dir   string // the variant's folder: its servers' logs
	log   *slog.Logger

	nodes []node // Ready nodes, servers spread over them in turn

	cancel  context.CancelFunc // the pod watch
	watched chan struct{}      // closed when the watch has ended

	mu       sync.Mutex
	servers  map[string]*server
	programs map[string]*program // by pod name (program.go)
	early    map[string]*pod     // a program pod's last event before its uid was claimed
	laidOut  int
	// users are the servers that switch to a user of their own (by
	// name): their folders are opened to it.
	users    map[string]string
	ports    map[int]bool // host ports taken on the nodes' network
	nextPort int
	closed   bool
}

// node is a Ready node and the address pods on its network are reached at.
type node struct {
	name, ip string
	cpus     float64 // its CPU capacity
}

// Port range of servers on the nodes' network: a block of 100 at a random
// place, under the ephemeral ports (the runtime's streaming server takes
// one of those) and over the control plane's.
const (
	portLow    = 20000
	portBlocks = 90
	portBlock  = 100
)

// open finds the Ready nodes and the host ports in use, and starts
// watching the namespace's pods.
func (s *Site) open(ctx context.Context) error {
	var nodes struct {
		Items []struct {
			Metadata objectMeta `json:"metadata"`
			Spec     struct {
				Unschedulable bool `json:"unschedulable"`
			} `json:"spec"`
			Status struct {
				Addresses []struct {
					Type    string `json:"type"`
					Address string `json:"address"`
				} `json:"addresses"`
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
				Capacity map[string]string `json:"capacity"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := s.k.getJSON(ctx, &nodes, "nodes"); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		ready, ip := false, ""
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == "Ready" && c.Status == "True"
		}
		for _, a := range n.Status.Addresses {
			if a.Type == "InternalIP" && ip == "" {
				ip = a.Address
			}
		}
		if ready && ip != "" && !n.Spec.Unschedulable {
			cpus, _ := quantity(n.Status.Capacity["cpu"])
			s.nodes = append(s.nodes, node{name: n.Metadata.Name, ip: ip, cpus: cpus})
		}
	}
	if len(s.nodes) == 0 {
		return errors.New("no Ready node with an InternalIP")
	}
	var pods struct {
		Items []pod `json:"items"`
	}
	if err := s.k.getJSON(ctx, &pods, "pods", "--all-namespaces"); err != nil {
		return err
	}
	s.ports = map[int]bool{}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					s.ports[port.HostPort] = true
				}
				if p.Spec.HostNetwork {
					s.ports[port.ContainerPort] = true
				}
			}
		}
	}
	s.nextPort = portLow + rand.IntN(portBlocks)*portBlock
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.watched = cancel, make(chan struct{})
	go s.watch(wctx)
	return nil
}

// port is a host port of the nodes' network no pod declares.
func (s *Site) port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.ports[s.nextPort] {
		s.nextPort++
	}
	p := s.nextPort
	s.ports[p] = true
	s.nextPort++
	return p
}

// watch follows the namespace's pods (kubectl get -w) and tells each
// server what became of its pod, until ctx ends; a watch that ends
// before is started again.
func (s *Site) watch(ctx context.Context) {
	defer close(s.watched)
	for ctx.Err() == nil {
		cmd := s.k.command(ctx, "get", "pods", "-n", s.ns, "--watch", "--output-watch-events", "-o", "json")
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			s.log.Warn("watch pods", "namespace", s.ns, "err", err)
		} else {
			dec := json.NewDecoder(out)
			for {
				var ev struct {
					Type   string `json:"type"`
					Object pod    `json:"object"`
				}
				if err := dec.Decode(&ev); err != nil {
					if !errors.Is(err, io.EOF) && ctx.Err() == nil {
						s.log.Warn("watch pods", "namespace", s.ns, "err", err)
					}
					break
				}
				s.dispatch(ev.Type, &ev.Object)
			}
			_ = cmd.Wait()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// dispatch gives a pod's event to the server it belongs to.
func (s *Site) dispatch(typ string, p *pod) {
	s.mu.Lock()
	sv := s.servers[p.Metadata.Labels[LabelMember]]
	pg := s.programs[p.Metadata.Labels[LabelProgram]]
	s.mu.Unlock()
	switch {
	case p.Metadata.Labels[LabelProgram] != "":
		if pg != nil {
			pg.observe(typ, p)
		}
	case sv != nil:
		sv.observe(typ, p)
	}
}

func (s *Site) Placement() lab.Placement { return s.p }

// Namespace is the variant's namespace.
func (s *Site) Namespace() string { return s.ns }

// Listen: a program in a pod listens on every interface and advertises
// its pod's address.
func (s *Site) Listen() (string, string) { return "0.0.0.0", "auto" }

// Owners maps a client address (ip:port, as a server sees the
// connection) to the program whose pod holds that socket: the TCP
// sockets of the processes in each program's pod cgroup, from /proc, at
// the moment of the call. Only where the pods' node is this machine (the
// test cluster); elsewhere no address has an owner.
func (s *Site) Owners() func(remote string) lab.Proc {
	byAddr := map[string]lab.Proc{}
	s.mu.Lock()
	var progs []*program
	for _, pg := range s.programs {
		if pg.podProc != nil {
			progs = append(progs, pg)
		}
	}
	s.mu.Unlock()
	for _, pg := range progs {
		select {
		case <-pg.done:
			continue
		default:
		}
		for _, a := range sockets.Local(podPids(pg.uid)) {
			byAddr[a] = pg
		}
	}
	return func(remote string) lab.Proc {
		if p, ok := byAddr[strings.TrimPrefix(remote, "/")]; ok {
			return p
		}
		return nil
	}
}

func (s *Site) Note() string { return "" }

// Unenforced: the kubelet enforces memory and CPU limits; a pod's pids
// are the kubelet's podPidsLimit, not the program's.
func (s *Site) Unenforced() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sv := range s.servers {
		if sv.Limits().Pids > 0 {
			return []string{"pids"}
		}
	}
	return nil
}

// Close stops following the pods (their port forwards and logs) and
// deletes the namespace, waiting until it is gone.
func (s *Site) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	svs := make([]*server, 0, len(s.servers))
	for _, sv := range s.servers {
		svs = append(svs, sv)
	}
	var stops []func()
	for _, pg := range s.programs {
		pg.mu.Lock()
		if pg.stopLogs != nil {
			stops = append(stops, pg.stopLogs)
		}
		pg.stopLogs = nil
		pg.mu.Unlock()
	}
	s.mu.Unlock()
	for _, sv := range svs {
		sv.detach()
	}
	for _, stop := range stops {
		stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The pods first, each with a second to stop, so that the namespace
	// does not wait out their grace periods.
	if _, err := s.k.run(ctx, nil, "delete", "pods", "--all", "-n", s.ns, "--grace-period=1", "--wait=false"); err != nil && !isNotFound(err) {
		s.log.Warn("delete pods", "namespace", s.ns, "err", err)
	}
	_, err := s.k.runFor(ctx, 160*time.Second, nil, "delete", "namespace", s.ns, "--wait=true", "--timeout=150s")
	if isNotFound(err) {
		err = nil
	}
	// The claims went with the namespace; their volumes go after them.
	if err == nil && s.p.storageClass() != "" {
		err = waitVolumesGone(ctx, s.k, s.ns, time.Minute)
	}
	if s.cancel != nil {
		s.cancel()
		<-s.watched
	}
	if err != nil {
		return fmt.Errorf("close kubernetes site: %w", err)
	}
	return nil
}

var _ lab.Site = (*Site)(nil)

// netns is a namespace to act in: ns while its process lives, else that
// of a process of another running server of the site (they share their
// node's network on a one-node cluster).
func (s *Site) netns(ns netcut.Netns) netcut.Netns {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", ns)); err == nil {
		return ns
	}
	s.mu.Lock()
	svs := make([]*server, 0, len(s.servers))
	for _, sv := range s.servers {
		svs = append(svs, sv)
	}
	s.mu.Unlock()
	for _, sv := range svs {
		if pp := sv.current(); pp != nil {
			pp.mu.Lock()
			uid, cid := pp.uid, pp.cid
			pp.mu.Unlock()
			if pids := containerPids(uid, cid); len(pids) > 0 {
				return netcut.Netns(pids[0])
			}
		}
	}
	return ns
}
