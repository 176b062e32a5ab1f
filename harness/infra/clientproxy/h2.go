package clientproxy

import (
	"encoding/binary"
	"errors"
	"sync"
)

// h2Preface opens every HTTP/2 connection from the client.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// HTTP/2 frame types and flags (RFC 9113, section 6) that open and end
// streams.
const (
	h2Data      = 0x0
	h2Headers   = 0x1
	h2RSTStream = 0x3
	h2EndStream = 0x1
)

// h2state is one connection's open streams, as both directions show them.
type h2state struct {
	k    *conn
	mu   sync.Mutex
	open map[uint32]bool
	last uint32 // the highest stream the client opened
}

// frame applies one frame's header: the client opens a stream with its
// first HEADERS (a later one is its trailers); the server ends it with
// END_STREAM; either side may reset it.
func (s *h2state) frame(client bool, typ, flags byte, stream uint32) {
	if stream == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case client && typ == h2Headers && stream > s.last:
		s.last = stream
		s.open[stream] = true
		s.k.opened()
	case typ == h2RSTStream, !client && (typ == h2Headers || typ == h2Data) && flags&h2EndStream != 0:
		if s.open[stream] {
			delete(s.open, stream)
			s.k.answered()
		}
	}
}

// h2reader reads one direction's frames as the bytes pass, without
// holding their payloads.
type h2reader struct {
	s       *h2state
	client  bool
	preface int    // bytes of the client's preface still to skip
	head    []byte // a frame header read in part
	skip    int    // payload bytes still to skip
}

var errH2 = errors.New("not an HTTP/2 stream")

func (r *h2reader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch {
		case r.preface > 0:
			k := min(r.preface, len(p))
			off := len(h2Preface) - r.preface
			if string(p[:k]) != h2Preface[off:off+k] {
				return 0, errH2
			}
			r.preface -= k
			p = p[k:]
		case r.skip > 0:
			k := min(r.skip, len(p))
			r.skip -= k
			p = p[k:]
		default:
			k := min(9-len(r.head), len(p))
			r.head = append(r.head, p[:k]...)
			p = p[k:]
			if len(r.head) < 9 {
				continue
			}
			length := int(r.head[0])<<16 | int(r.head[1])<<8 | int(r.head[2])
			stream := binary.BigEndian.Uint32(r.head[5:9]) & 0x7fffffff
			r.s.frame(r.client, r.head[3], r.head[4], stream)
			r.head, r.skip = r.head[:0], length
		}
	}
	return n, nil
}

func (r *h2reader) Close() error { return nil }
