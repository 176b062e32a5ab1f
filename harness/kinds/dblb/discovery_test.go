package dblb

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// dnsStub answers TCP SRV queries with the code and hosts rcode() says
// (a unit test of the discovery code; the scenario runs real agents).
func dnsStub(t *testing.T, rcode func() dnsmessage.RCode, ports []uint16) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var n [2]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				buf := make([]byte, binary.BigEndian.Uint16(n[:]))
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				var q dnsmessage.Message
				if q.Unpack(buf) != nil {
					return
				}
				rc := rcode()
				m := dnsmessage.Message{Header: dnsmessage.Header{ID: q.Header.ID, Response: true, RCode: rc}, Questions: q.Questions}
				if rc == dnsmessage.RCodeSuccess {
					for i, p := range ports {
						target := dnsmessage.MustNewName("replica" + string(rune('1'+i)) + ".node.consul.")
						m.Answers = append(m.Answers, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: q.Questions[0].Name, Type: dnsmessage.TypeSRV, Class: dnsmessage.ClassINET},
							Body: &dnsmessage.SRVResource{Port: p, Target: target}})
						m.Additionals = append(m.Additionals, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: target, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET},
							Body: &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}}})
					}
				}
				out, err := m.Pack()
				if err != nil {
					return
				}
				binary.BigEndian.PutUint16(n[:], uint16(len(out)))
				_, _ = c.Write(append(n[:], out...))
			}()
		}
	}()
	return ln.Addr().String()
}

func testProcess(addr, discovery string) *process {
	s := NewSettings()
	s.Discovery, s.LookupTimeout = discovery, lab.Duration(time.Second)
	return newProcess("p", 0, addr, "127.0.0.1:1", s, newRecorder(time.Now()), 1)
}

func TestLookupParsesHosts(t *testing.T) {
	addr := dnsStub(t, func() dnsmessage.RCode { return dnsmessage.RCodeSuccess }, []uint16{5434, 5433})
	a := lookupSRV(context.Background(), addr, replicaName, time.Second, 1)
	if a.Err != nil || len(a.Hosts) != 2 || a.Hosts[0] != "127.0.0.1:5433" || a.Hosts[1] != "127.0.0.1:5434" {
		t.Fatalf("answer %+v", a)
	}
}

// The 2022 code empties the list on a SERVFAIL and keeps it when no reply
// comes; the later code keeps it on both and retries.
func TestDiscoveryCodes(t *testing.T) {
	var code atomic.Int32
	addr := dnsStub(t, func() dnsmessage.RCode { return dnsmessage.RCode(code.Load()) }, []uint16{5433, 5434})
	ctx := context.Background()
	for _, tc := range []struct {
		discovery              string
		afterServfail, retries int
	}{{Discovery2022, 0, 1}, {DiscoveryLater, 2, laterRetries}} {
		p := testProcess(addr, tc.discovery)
		code.Store(int32(dnsmessage.RCodeSuccess))
		p.refresh(ctx)
		if p.listed() != 2 {
			t.Fatalf("%s: %d listed after an answer", tc.discovery, p.listed())
		}
		code.Store(int32(dnsmessage.RCodeServerFailure))
		p.refresh(ctx)
		if p.listed() != tc.afterServfail || p.empty.Load() != int64(tc.retries) {
			t.Fatalf("%s: %d listed, %d empty after a SERVFAIL", tc.discovery, p.listed(), p.empty.Load())
		}
		if addr, primary := p.pick(); primary != (tc.afterServfail == 0) || addr == "" {
			t.Fatalf("%s: read to %s (primary %v)", tc.discovery, addr, primary)
		}
		// No reply at all (a dead agent): the list stays as it is.
		p.dnsAddr = "127.0.0.1:1"
		before := p.listed()
		p.refresh(ctx)
		if p.listed() != before || p.failed.Load() != int64(tc.retries) {
			t.Fatalf("%s: %d listed (was %d), %d failed with no reply", tc.discovery, p.listed(), before, p.failed.Load())
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 3, 2, 4}
	if q := quantile(xs, 0.5); q != 3 {
		t.Fatalf("median %g", q)
	}
	if q := quantile(xs, 0.99); q != 5 {
		t.Fatalf("p99 %g", q)
	}
}

// The forwarder answers over TCP and UDP, and counts what its pod got:
// replicas, an empty reply, no reply from the agent (its own SERVFAIL).
func TestForwarderCountsLookups(t *testing.T) {
	var code atomic.Int32
	up := dnsStub(t, func() dnsmessage.RCode { return dnsmessage.RCode(code.Load()) }, []uint16{5433})
	f, err := startForwarder("127.0.0.1", up, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	if a := lookupSRV(ctx, f.Addr(), replicaName, time.Second, 1); len(a.Hosts) != 1 {
		t.Fatalf("over TCP: %+v", a)
	}
	q, err := query(replicaName, 2)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("udp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(q[2:]); err != nil { // UDP: no length prefix
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if a := parse(buf[:n]); len(a.Hosts) != 1 {
		t.Fatalf("over UDP: %+v", a)
	}
	code.Store(int32(dnsmessage.RCodeNameError))
	if a := lookupSRV(ctx, f.Addr(), replicaName, time.Second, 3); !a.Empty() {
		t.Fatalf("NXDOMAIN: %+v", a)
	}
	if got := f.lookups(); got != [3]int64{2, 1, 0} {
		t.Fatalf("answered, empty, failed = %v, want [2 1 0]", got)
	}
	dead, err := startForwarder("127.0.0.1", "127.0.0.1:1", time.Second, nil) // the agent is dead
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if a := lookupSRV(ctx, dead.Addr(), replicaName, time.Second, 4); !a.Empty() || a.RCode != dnsmessage.RCodeServerFailure {
		t.Fatalf("dead agent: %+v", a)
	}
	if got := dead.lookups(); got != [3]int64{0, 0, 1} {
		t.Fatalf("dead agent: answered, empty, failed = %v, want [0 0 1]", got)
	}
}
