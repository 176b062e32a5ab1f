package dblb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// pgProxy is one pod's way to the primary: it relays the pod's
// connections and counts each statement the pod sends (a simple query, or
// an Execute of a parsed statement), read or write, as it passes: what
// the pod asked of the primary even when the primary, saturated, is too
// slow to start it (its own statement log then lags or misses it).
type pgProxy struct {
	ln       net.Listener
	upstream string
	count    func(at time.Time, write bool)
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

// startPGProxy listens on a free port of host and relays to upstream.
func startPGProxy(host, upstream string, count func(at time.Time, write bool)) (*pgProxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("start primary proxy: %w", err)
	}
	p := &pgProxy{ln: ln, upstream: upstream, count: count, conns: map[net.Conn]bool{}}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is what the pod is told the primary is.
func (p *pgProxy) Addr() string { return p.ln.Addr().String() }

func (p *pgProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.relay(c) })
	}
}

func (p *pgProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false // closed
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

// relay copies the server's bytes back as they come and reads the pod's
// messages on their way.
func (p *pgProxy) relay(c net.Conn) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(c, up) {
		return
	}
	defer p.untrack(c, up)
	p.wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
	_ = frontend(c, up, p.count)
}

func (p *pgProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

// frontend reads the client's side of the protocol (startup, then typed
// messages), forwards every byte to up and counts the statements.
func frontend(c io.Reader, up io.Writer, count func(time.Time, bool)) error {
	var hdr [8]byte
	for { // startup, or SSL / GSS encryption requests answered 'N'
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 8 || n > 1<<20 {
			return errors.New("bad startup message")
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(c, body); err != nil {
			return err
		}
		if _, err := up.Write(append(hdr[:], body...)); err != nil {
			return err
		}
		if code := binary.BigEndian.Uint32(hdr[4:]); code != 80877103 && code != 80877104 {
			break
		}
	}
	st := statements{named: map[string]bool{}, portals: map[string]bool{}}
	for {
		if _, err := io.ReadFull(c, hdr[:5]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[1:5])
		if n < 4 || n > 1<<30 {
			return errors.New("bad message")
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(c, body); err != nil {
			return err
		}
		if write, ok := st.message(hdr[0], body); ok {
			count(time.Now(), write)
		}
		if _, err := up.Write(append(hdr[:5:5], body...)); err != nil {
			return err
		}
	}
}

// statements follows one connection's parsed statements and portals:
// whether each writes (true) or reads.
type statements struct{ named, portals map[string]bool }

// message returns, for a message that runs a statement, whether it writes.
func (s statements) message(typ byte, body []byte) (write, runs bool) {
	f := bytes.Split(body, []byte{0})
	switch {
	case typ == 'Q' && len(f) > 0:
		return isWrite(f[0])
	case typ == 'P' && len(f) > 1: // Parse: name, query
		if w, ok := isWrite(f[1]); ok {
			s.named[string(f[0])] = w
		}
	case typ == 'B' && len(f) > 1: // Bind: portal, statement
		if w, ok := s.named[string(f[1])]; ok {
			s.portals[string(f[0])] = w
		} else {
			delete(s.portals, string(f[0]))
		}
	case typ == 'E' && len(f) > 0: // Execute: portal
		w, ok := s.portals[string(f[0])]
		return w, ok
	}
	return false, false
}

// isWrite: a statement of the pod's that reads (SELECT, WITH) or writes
// (INSERT, UPDATE, DELETE); anything else (BEGIN, SET) is neither.
func isWrite(q []byte) (write, ok bool) {
	w := strings.Fields(strings.ToLower(string(q)))
	if len(w) == 0 {
		return false, false
	}
	switch w[0] {
	case "select", "with":
		return false, true
	case "insert", "update", "delete":
		return true, true
	}
	return false, false
}

// Close stops the proxy and its connections.
func (p *pgProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
