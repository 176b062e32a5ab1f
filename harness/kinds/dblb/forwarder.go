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
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// forwarder is a pod's DNS forwarder in front of its agent, as a cluster
// DNS (CoreDNS's forward plugin, a dnsmasq or systemd-resolved stub for
// the consul domain, which Consul's docs recommend) sits between an app
// and the agent: it relays each TCP query to the agent and, when the
// agent does not answer (refused while dead, reset, timed out), answers
// SERVFAIL itself. To the app a dead agent is then an empty reply, not a
// lookup error.
type forwarder struct {
	ln       net.Listener
	upstream string
	timeout  time.Duration
	log      *slog.Logger
	wg       sync.WaitGroup
}

// startForwarder listens on a free loopback port and relays to upstream.
func startForwarder(upstream string, timeout time.Duration, log *slog.Logger) (*forwarder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start dns forwarder: %w", err)
	}
	f := &forwarder{ln: ln, upstream: upstream, timeout: timeout, log: log}
	f.wg.Go(f.serve)
	return f, nil
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
	reply, err := f.relay(q)
	if err != nil {
		if reply, err = servfail(q); err != nil {
			return
		}
	}
	_ = writeMsg(c, reply)
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
	err := f.ln.Close()
	f.wg.Wait()
	return err
}
