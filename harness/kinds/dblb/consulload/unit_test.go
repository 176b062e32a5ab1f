package consulload

import (
	"testing"
)

func TestServiceRegistrations(t *testing.T) {
	s := NewService()
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	addrs := map[string]bool{}
	for i := range s.Instances {
		r := s.registration(i, "passing")
		if addrs[r.Address] {
			t.Fatalf("address %s twice", r.Address)
		}
		addrs[r.Address] = true
		if len(r.Check.Output) != s.OutputBytes {
			t.Fatalf("output %d bytes, want %d", len(r.Check.Output), s.OutputBytes)
		}
	}
	for _, bad := range []Service{{Name: "a.b", Instances: 1}, {Name: "x", Instances: 0}, {Name: "x", Instances: 1, OutputBytes: -1}} {
		if bad.Check() == nil {
			t.Errorf("%+v passed Check", bad)
		}
	}
}

func TestLoadCheck(t *testing.T) {
	for _, c := range []struct {
		l  Load
		ok bool
	}{
		{Load{Service: "x", Lookers: 1, DNSAddr: "127.0.0.1:1"}, true},
		{Load{Service: "x", Lookers: 1}, false},
		{Load{Service: "x", Watchers: 1}, false},
		{Load{Lookers: 1, DNSAddr: "127.0.0.1:1"}, false},
		{Load{Service: "x", Lookers: 5001, DNSAddr: "127.0.0.1:1"}, false},
	} {
		if err := c.l.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.l, err)
		}
	}
}

func TestPeak(t *testing.T) {
	c, r, k := Peak([]Sample{{ChargedBytes: 5, RSSBytes: 9, PeakBytes: 100}, {ChargedBytes: 7, RSSBytes: 3, OOMKills: 1}})
	if c != 7 || r != 9 || k != 1 {
		t.Fatalf("Peak = %d %d %d", c, r, k)
	}
}
