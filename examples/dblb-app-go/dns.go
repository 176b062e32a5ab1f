package main

import (
	"context"
	"net"
	"slices"
	"strconv"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// lookup asks server over UDP for name's SRV records: the replicas'
// host:port (each target's address from the additional records), and
// whether any reply came.
func lookup(ctx context.Context, server, name string, timeout time.Duration) (hosts []string, replied bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q, err := query(name)
	if err != nil {
		return nil, false
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", server)
	if err != nil {
		return nil, false
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	if _, err := c.Write(q); err != nil {
		return nil, false
	}
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	if err != nil {
		return nil, false
	}
	var m dnsmessage.Message
	if m.Unpack(buf[:n]) != nil {
		return nil, false
	}
	return targets(m), true
}

func query(name string) ([]byte, error) {
	qn, err := dnsmessage.NewName(name + ".")
	if err != nil {
		return nil, err
	}
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: uint16(time.Now().UnixNano()), RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: qn, Type: dnsmessage.TypeSRV, Class: dnsmessage.ClassINET}}}
	return m.Pack()
}

// targets pairs each SRV record's port with its target's A record.
func targets(m dnsmessage.Message) []string {
	addrs := map[string]string{}
	for _, r := range m.Additionals {
		if a, ok := r.Body.(*dnsmessage.AResource); ok {
			addrs[r.Header.Name.String()] = net.IP(a.A[:]).String()
		}
	}
	var out []string
	for _, r := range m.Answers {
		if s, ok := r.Body.(*dnsmessage.SRVResource); ok {
			if ip, ok := addrs[s.Target.String()]; ok {
				out = append(out, net.JoinHostPort(ip, strconv.Itoa(int(s.Port))))
			}
		}
	}
	slices.Sort(out)
	return out
}
