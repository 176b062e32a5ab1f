package dblb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Answer is what one SRV lookup at the agent got, as GitLab's resolver
// (the net-dns gem over TCP) saw it: a reply with its response code and
// records, or no reply at all.
type Answer struct {
	// Hosts are the SRV targets' addresses with their ports, sorted
	// ("127.0.0.1:5433"), from the additional A records.
	Hosts []string
	// RCode is the reply's response code (dnsmessage.RCodeSuccess,
	// RCodeServerFailure, RCodeNameError...).
	RCode dnsmessage.RCode
	// Err is set when no reply came (refused, reset, timed out): net-dns
	// raises then, and the load balancer's rescue keeps its list.
	Err error
}

// Empty: a reply came with no usable host (NOERROR with no record,
// NXDOMAIN, SERVFAIL): net-dns returns such a packet without raising.
func (a Answer) Empty() bool { return a.Err == nil && len(a.Hosts) == 0 }

// lookupSRV asks the DNS server at addr over TCP for name's SRV records.
func lookupSRV(ctx context.Context, addr, name string, timeout time.Duration, id uint16) Answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q, err := query(name, id)
	if err != nil {
		return Answer{Err: err}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Answer{Err: fmt.Errorf("dial dns: %w", err)}
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := conn.Write(q); err != nil {
		return Answer{Err: fmt.Errorf("send query: %w", err)}
	}
	var n [2]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return Answer{Err: fmt.Errorf("read reply: %w", err)}
	}
	buf := make([]byte, binary.BigEndian.Uint16(n[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return Answer{Err: fmt.Errorf("read reply: %w", err)}
	}
	return parse(buf)
}

// query is a TCP DNS query (length-prefixed) for name's SRV records.
func query(name string, id uint16) ([]byte, error) {
	qn, err := dnsmessage.NewName(name)
	if err != nil {
		return nil, fmt.Errorf("build query: %w", err)
	}
	b := dnsmessage.NewBuilder(make([]byte, 2, 512), dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		return nil, fmt.Errorf("build query: %w", err)
	}
	if err := b.Question(dnsmessage.Question{Name: qn, Type: dnsmessage.TypeSRV, Class: dnsmessage.ClassINET}); err != nil {
		return nil, fmt.Errorf("build query: %w", err)
	}
	msg, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("build query: %w", err)
	}
	binary.BigEndian.PutUint16(msg, uint16(len(msg)-2))
	return msg, nil
}

// parse reads a reply: its code, and each SRV target's A record with the
// SRV port (how GitLab's SrvResolver paired them).
func parse(buf []byte) Answer {
	var m dnsmessage.Message
	if err := m.Unpack(buf); err != nil {
		return Answer{Err: fmt.Errorf("parse reply: %w", err)}
	}
	a := Answer{RCode: m.Header.RCode}
	addrs := map[string]string{}
	for _, r := range m.Additionals {
		if ar, ok := r.Body.(*dnsmessage.AResource); ok {
			addrs[r.Header.Name.String()] = net.IP(ar.A[:]).String()
		}
	}
	for _, r := range m.Answers {
		srv, ok := r.Body.(*dnsmessage.SRVResource)
		if !ok {
			continue
		}
		ip, ok := addrs[srv.Target.String()]
		if !ok {
			continue
		}
		a.Hosts = append(a.Hosts, net.JoinHostPort(ip, strconv.Itoa(int(srv.Port))))
	}
	slices.Sort(a.Hosts)
	return a
}

// errNoAnswer marks a lookup that got nothing usable.
var errNoAnswer = errors.New("no usable answer")
