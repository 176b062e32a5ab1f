package ebs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	zlog "github.com/rs/zerolog/log"
)

// Links are the nodes' links: an in-process toxiproxy (v2.12.0) on
// 127.0.0.1 with one proxy in front of each node's mirror port. Every
// primary reaches its mirror through the mirror's proxy, so toxics on a
// zone's proxies degrade every link of that zone.
type Links struct {
	srv *toxiproxy.ApiServer

	mu      sync.Mutex
	proxies map[string][]*toxiproxy.Proxy // by zone
}

// quiet silences toxiproxy's toxics, which log through zerolog's global
// logger at trace level (the controller has no other zerolog user).
var quiet sync.Once

// NewLinks starts the proxy server (no HTTP API: the harness drives it).
func NewLinks() *Links {
	quiet.Do(func() {
		nop := zerolog.Nop()
		zlog.Logger = nop
		zerolog.DefaultContextLogger = &nop
	})
	return &Links{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), proxies: map[string][]*toxiproxy.Proxy{}}
}

// Add puts a proxy on host (where the nodes reach the controller) in
// front of a node's mirror port and returns where it listens.
func (l *Links) Add(zone, node, host, upstream string) (string, error) {
	p := toxiproxy.NewProxy(l.srv, node, net.JoinHostPort(host, "0"), upstream)
	if err := l.srv.Collection.Add(p, true); err != nil {
		return "", fmt.Errorf("add proxy: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proxies[zone] = append(l.proxies[zone], p)
	return p.Listen, nil
}

// SetUpstream points a node's proxy at where the node listens, once it
// runs (a container's address is known only then); the proxy keeps its
// address.
func (l *Links) SetUpstream(node, upstream string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ps := range l.proxies {
		for _, p := range ps {
			if p.Name != node || p.Upstream == upstream {
				continue
			}
			if err := p.Update(&toxiproxy.Proxy{Name: p.Name, Listen: p.Listen, Upstream: upstream, Enabled: true}); err != nil {
				return fmt.Errorf("set upstream of %s: %w", node, err)
			}
		}
	}
	return nil
}

// toxic is one toxic as toxiproxy's API takes it.
type toxic struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Toxicity   float64        `json:"toxicity"`
	Attributes map[string]any `json:"attributes"`
}

func toxicsFor(t LinkToxics) []toxic {
	var out []toxic
	for _, dir := range []string{"upstream", "downstream"} {
		add := func(typ string, attrs map[string]any) {
			out = append(out, toxic{Name: typ + "_" + dir, Type: typ, Stream: dir, Toxicity: 1, Attributes: attrs})
		}
		if t.Latency > 0 {
			add("latency", map[string]any{"latency": t.Latency.Milliseconds(), "jitter": t.Jitter.Milliseconds()})
		}
		if t.BandwidthKBps > 0 {
			add("bandwidth", map[string]any{"rate": t.BandwidthKBps})
		}
		if t.Timeout > 0 {
			add("timeout", map[string]any{"timeout": t.Timeout.Milliseconds()})
		}
	}
	return out
}

// Degrade puts the toxics on every proxy of the zone.
func (l *Links) Degrade(zone string, t LinkToxics) error {
	l.mu.Lock()
	ps := l.proxies[zone]
	l.mu.Unlock()
	if len(ps) == 0 {
		return fmt.Errorf("degrade links: no links in %s", zone)
	}
	for _, p := range ps {
		for _, tx := range toxicsFor(t) {
			b, _ := json.Marshal(tx)
			if _, err := p.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
				return fmt.Errorf("add toxic %s to %s: %w", tx.Name, p.Name, err)
			}
		}
	}
	return nil
}

// Restore gives the zone clean links: each proxy is replaced by a new
// one without toxics on the same address. Toxiproxy takes a toxic off an
// open connection only once the data queued in it has drained (at 2 KB/s
// a volume's copy takes half a minute) and holds new connections until
// then; the nodes took the open connections for dead already, and the
// network change being undone resets them.
func (l *Links) Restore(_ context.Context, zone string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for i, p := range l.proxies[zone] {
		if err := l.srv.Collection.Remove(p.Name); err != nil {
			errs = append(errs, fmt.Errorf("remove proxy %s: %w", p.Name, err))
			continue
		}
		np := toxiproxy.NewProxy(l.srv, p.Name, p.Listen, p.Upstream)
		if err := l.srv.Collection.Add(np, true); err != nil {
			errs = append(errs, fmt.Errorf("restart proxy %s: %w", p.Name, err))
			continue
		}
		l.proxies[zone][i] = np
	}
	return errors.Join(errs...)
}

// Toxics reads back from the proxies how many links of the zone carry
// how many toxics.
func (l *Links) Toxics(zone string) (links, toxics int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.proxies[zone] {
		links++
		toxics += len(p.Toxics.GetToxicArray())
	}
	return links, toxics
}

// Close stops every proxy.
func (l *Links) Close() {
	_ = l.srv.Collection.Clear()
}

// Zone is a zone's storage nodes as a fault target.
type Zone struct {
	name  string
	links *Links
	w     *workload
}

// Name is the zone's name (its target group).
func (z *Zone) Name() string { return z.name }

// DegradeLinks puts the toxics on the zone's links.
func (z *Zone) DegradeLinks(_ context.Context, t LinkToxics) error {
	if z.links == nil {
		return errors.New("degrade links: the zone is not running")
	}
	return z.links.Degrade(z.name, t)
}

// ToxicLinks reads back the toxics on the zone's links (Links.Toxics).
func (z *Zone) ToxicLinks() (links, toxics int) {
	if z.links == nil {
		return 0, 0
	}
	return z.links.Toxics(z.name)
}

// RestoreLinks takes them off.
func (z *Zone) RestoreLinks(ctx context.Context) error {
	if z.links == nil {
		return nil
	}
	return z.links.Restore(ctx, z.name)
}

// Pause stops the zone's nodes (SIGSTOP), Resume continues them, Kill
// kills them; Restart is not something a zone does.
func (z *Zone) Pause() error  { return z.signal(syscall.SIGSTOP) }
func (z *Zone) Resume() error { return z.signal(syscall.SIGCONT) }
func (z *Zone) Kill() error   { return z.signal(syscall.SIGKILL) }

// Restart is refused: the storage nodes are not restarted in this replay.
func (z *Zone) Restart(context.Context) error {
	return fmt.Errorf("restart %s: a zone's storage nodes are not restarted in this replay", z.name)
}

func (z *Zone) signal(sig syscall.Signal) error {
	if z.w == nil {
		return errors.New("signal zone: not running")
	}
	var errs []error
	for _, n := range z.w.nodes {
		if n.zone == z.name && n.proc != nil {
			errs = append(errs, n.proc.Signal(sig))
		}
	}
	return errors.Join(errs...)
}

var _ LinkDegrader = (*Zone)(nil)
