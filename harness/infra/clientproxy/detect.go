package clientproxy

import (
	"errors"
	"io"
	"sync"
)

// detect tells a connection's protocol from the client's first bytes and
// then hands both directions to that protocol's readers. What the server
// sends before the client has said enough waits (a server of either
// protocol speaks second).
type detect struct {
	k        *conn
	mu       sync.Mutex
	first    []byte // the client's bytes until the protocol is known
	early    []byte // the server's bytes meanwhile
	up, down io.WriteCloser
	failed   bool
}

// maxEarly bounds what is held back from a server that speaks first.
const maxEarly = 64 << 10

var errUndecided = errors.New("protocol not recognised")

// detectSide is one direction's writer.
type detectSide struct {
	d      *detect
	client bool
}

func (s *detectSide) Write(p []byte) (int, error) {
	d := s.d
	d.mu.Lock()
	if d.failed {
		d.mu.Unlock()
		return 0, errUndecided
	}
	if d.up == nil {
		if !s.client {
			d.early = append(d.early, p...)
			d.failed = len(d.early) > maxEarly
			d.mu.Unlock()
			return len(p), nil
		}
		d.first = append(d.first, p...)
		if !d.decide() {
			d.mu.Unlock()
			return len(p), nil
		}
		first, early := d.first, d.early
		d.first, d.early = nil, nil
		up, down := d.up, d.down
		d.mu.Unlock()
		if _, err := up.Write(first); err != nil {
			return 0, err
		}
		if len(early) > 0 {
			if _, err := down.Write(early); err != nil {
				return 0, err
			}
		}
		return len(p), nil
	}
	w := d.down
	if s.client {
		w = d.up
	}
	d.mu.Unlock()
	return w.Write(p)
}

// decide picks the readers once the client's bytes show the protocol
// (false while they still could be HTTP/2's preface); d.mu is held.
func (d *detect) decide() bool {
	n := min(len(d.first), len(h2Preface))
	switch {
	case string(d.first[:n]) != h2Preface[:n]:
		d.up, d.down = newHTTP1(d.k)
	case n == len(h2Preface):
		s := &h2state{k: d.k, open: map[uint32]bool{}}
		d.up, d.down = &h2reader{s: s, client: true, preface: len(h2Preface)}, &h2reader{s: s}
	default:
		return false
	}
	return true
}

func (s *detectSide) Close() error {
	d := s.d
	d.mu.Lock()
	w := d.down
	if s.client {
		w = d.up
	}
	d.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Close()
}
