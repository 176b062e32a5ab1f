// Package clientproxy counts one client's traffic to the servers on its
// way there, for systems whose servers do not list their client
// connections (ZooKeeper's cons does; etcd and Consul do not): a relay on
// loopback in front of each server endpoint, given to that client alone,
// which reads its protocol (HTTP/2 for gRPC, HTTP/1.1) as it passes to
// count its connections, its requests and those not answered yet. The
// figures are the servers' side of the client, measured outside it,
// whatever the client reports.
package clientproxy

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Counts is what one client's relays saw.
type Counts struct {
	// Connections it opened, Requests it sent (both since the start),
	// Outstanding its requests not answered yet.
	Connections, Requests, Outstanding int64
}

// Client is one client's relays, one per server endpoint.
type Client struct {
	relays  map[string]*relay // by upstream host:port
	conns   atomic.Int64
	reqs    atomic.Int64
	pending atomic.Int64
}

// New starts a relay on a free loopback port in front of each upstream
// (host:port).
func New(upstreams []string) (*Client, error) {
	c := &Client{relays: map[string]*relay{}}
	for _, up := range upstreams {
		if _, ok := c.relays[up]; ok {
			continue
		}
		r, err := startRelay(c, up)
		if err != nil {
			return nil, errors.Join(err, c.Close())
		}
		c.relays[up] = r
	}
	return c, nil
}

// Via is the address the client is told in place of upstream (upstream
// itself when no relay stands in front of it).
func (c *Client) Via(upstream string) string {
	if r, ok := c.relays[upstream]; ok {
		return r.ln.Addr().String()
	}
	return upstream
}

// Counts is what the relays counted so far.
func (c *Client) Counts() Counts {
	return Counts{Connections: c.conns.Load(), Requests: c.reqs.Load(), Outstanding: max(0, c.pending.Load())}
}

// Close stops every relay and ends the connections through them.
func (c *Client) Close() error {
	var errs []error
	for _, r := range c.relays {
		errs = append(errs, r.close())
	}
	return errors.Join(errs...)
}

// conn is the counting state of one connection: the requests it holds
// open are given back when it ends.
type conn struct {
	c       *Client
	mu      sync.Mutex
	pending int64
	ended   bool
}

func (k *conn) opened() {
	k.mu.Lock()
	ended := k.ended
	k.mu.Unlock()
	if !ended {
		k.c.reqs.Add(1)
		k.add(1)
	}
}

func (k *conn) answered() { k.add(-1) }

func (k *conn) add(d int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended || k.pending+d < 0 {
		return
	}
	k.pending += d
	k.c.pending.Add(d)
}

// end drops what the connection still held: no answer comes on a closed
// connection.
func (k *conn) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c.pending.Add(-k.pending)
	k.pending, k.ended = 0, true
}

// sniffers are a connection's two readers: what the client sent, what the
// server answered, told apart by the client's first bytes: HTTP/2's
// preface (gRPC) or else HTTP/1.1 (a JSON API).
func (k *conn) sniffers() (up, down io.WriteCloser) {
	d := &detect{k: k}
	return &detectSide{d: d, client: true}, &detectSide{d: d}
}
