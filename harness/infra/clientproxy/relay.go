package clientproxy

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// relay listens on loopback and passes each connection to its upstream.
type relay struct {
	c        *Client
	upstream string
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     map[net.Conn]bool // nil once closed
}

func startRelay(c *Client, upstream string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start client proxy: %w", err)
	}
	r := &relay{c: c, upstream: upstream, ln: ln, open: map[net.Conn]bool{}}
	r.wg.Go(r.serve)
	return r, nil
}

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() { r.pass(in) })
	}
}

// track remembers live connections so that close ends them (false once
// the relay is closed).
func (r *relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		return false
	}
	for _, c := range cs {
		r.open[c] = true
	}
	return true
}

func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.open, c)
	}
}

// pass relays one connection both ways, counting it as it goes. A
// connection the upstream refuses is closed at once, as the server's
// would be: the client sees its server down.
func (r *relay) pass(in net.Conn) {
	defer in.Close()
	out, err := net.DialTimeout("tcp", r.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	if !r.track(in, out) {
		return
	}
	defer r.untrack(in, out)
	r.c.conns.Add(1)
	k := &conn{c: r.c}
	defer k.end()
	up, down := k.sniffers()
	var wg sync.WaitGroup
	wg.Go(func() { copySniffed(out, in, up) })
	copySniffed(in, out, down)
	wg.Wait()
}

// copySniffed copies src to dst and shows each chunk to the sniffer,
// which may give up (an unreadable stream is still relayed); when either
// side ends, both are closed.
func copySniffed(dst, src net.Conn, sniff io.WriteCloser) {
	defer sniff.Close()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	sniffing := true
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if sniffing {
				_, serr := sniff.Write(buf[:n])
				sniffing = serr == nil
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *relay) close() error {
	err := r.ln.Close()
	r.mu.Lock()
	for c := range r.open {
		c.Close()
	}
	r.open = nil
	r.mu.Unlock()
	r.wg.Wait()
	return err
}
