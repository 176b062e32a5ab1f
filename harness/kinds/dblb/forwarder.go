package dblb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// forwarder is a pod's DNS forwarder in front of its agent, as a cluster
// DNS (CoreDNS's forward plugin, a dnsmasq or systemd-resolved stub for
// the consul domain, which Consul's docs recommend) sits between an app
// and the agent: it relays each TCP query to the agent and, when the
// agent does not answer (refused while dead, reset, timed out), answers
// SERVFAIL itself. To the app a dead agent is then an empty reply, not a
// lookup error. It takes queries over TCP and, on the same port, over UDP
// (relayed over TCP), and counts what it answered: the pod's lookups as
// seen from outside the app.
type forwarder struct {
	ln       net.Listener
	pc       net.PacketConn
	upstream string
	timeout  time.Duration
	log      *slog.Logger
	wg       sync.WaitGroup

	// answered: a reply with at least one SRV record; empty: a reply of
	// the agent's with none (NOERROR empty, NXDOMAIN, its own SERVFAIL);
	// failed: no reply from the agent (the forwarder's SERVFAIL).
	answered, empty, failed atomic.Int64
}

// startForwarder listens on a free port of host (TCP and UDP) and relays
// to upstream.
func startForwarder(host, upstream string, timeout time.Duration, log *slog.Logger) (*forwarder, error) {
	var last error
	for range 10 { // the UDP port of a free TCP port may be taken
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("start dns forwarder: %w", err)
		}
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err != nil {
			ln.Close()
			last = err
			continue
		}
		f := &forwarder{ln: ln, pc: pc, upstream: upstream, timeout: timeout, log: log}
		f.wg.Go(f.serve)
		f.wg.Go(f.serveUDP)
		return f, nil
	}
	return nil, fmt.Errorf("start dns forwarder: %w", last)
}

// Addr is where the pod's processes ask.
func (f *forwarder) Addr() string { return f.ln.Addr().String() }

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Go(func() { f.handle(c) })
	}
}

// handle relays one query and its reply, or answers SERVFAIL.
func (f *forwarder) handle(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * f.timeout))
	q, err := readMsg(c)
	if err != nil {
		return
	}
	if reply := f.answer(q); reply != nil {
		_ = writeMsg(c, reply)
	}
}

// serveUDP answers queries over UDP, each relayed over TCP.
func (f *forwarder) serveUDP() {
	buf := make([]byte, 0xffff)
	for {
		n, from, err := f.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := append([]byte(nil), buf[:n]...)
		f.wg.Go(func() {
			if reply := f.answer(q); reply != nil {
				_, _ = f.pc.WriteTo(reply, from)
			}
		})
	}
}

// answer is the reply to q: the agent's, or SERVFAIL; nil when q is not a
// DNS message.
func (f *forwarder) answer(q []byte) []byte {
	reply, err := f.relay(q)
	if err != nil {
		f.failed.Add(1)
		reply, _ = servfail(q)
		return reply
	}
	if srvRecords(reply) > 0 {
		f.answered.Add(1)
	} else {
		f.empty.Add(1)
	}
	return reply
}

// srvRecords counts the SRV records of a successful reply.
func srvRecords(reply []byte) int {
	var m dnsmessage.Message
	if err := m.Unpack(reply); err != nil || m.Header.RCode != dnsmessage.RCodeSuccess {
		return 0
	}
	n := 0
	for _, a := range m.Answers {
		if a.Header.Type == dnsmessage.TypeSRV {
			n++
		}
	}
	return n
}

// lookups are the forwarder's counts: answered, empty, failed.
func (f *forwarder) lookups() [3]int64 {
	return [3]int64{f.answered.Load(), f.empty.Load(), f.failed.Load()}
}

func (f *forwarder) relay(q []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", f.upstream)
	if err != nil {
		return nil, err
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(f.timeout))
	if err := writeMsg(up, q); err != nil {
		return nil, err
	}
	return readMsg(up)
}

// servfail is the reply to q with RCODE SERVFAIL and no record.
func servfail(q []byte) ([]byte, error) {
	var m dnsmessage.Message
	if err := m.Unpack(q); err != nil {
		return nil, err
	}
	m.Header.Response, m.Header.RCode, m.Header.RecursionAvailable = true, dnsmessage.RCodeServerFailure, true
	m.Answers, m.Authorities, m.Additionals = nil, nil, nil
	return m.Pack()
}

func readMsg(c io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint16(n[:]))
	if _, err := io.ReadFull(c, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func writeMsg(c io.Writer, m []byte) error {
	if len(m) > 0xffff {
		return errors.New("dns message too long")
	}
	var n [2]byte
	binary.BigEndian.PutUint16(n[:], uint16(len(m)))
	_, err := c.Write(append(n[:], m...))
	return err
}

// Close stops listening and waits for the queries in flight.
func (f *forwarder) Close() error {
	err := errors.Join(f.ln.Close(), f.pc.Close())
	f.wg.Wait()
	return err
}
