package ebs

import (
	"bufio"
	"context"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/lab"
)

func fields(ps []lab.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Field)
	}
	return out
}

func TestSettingsCheck(t *testing.T) {
	require.Empty(t, NewSettings().Check(), "the defaults are valid")
	for _, tc := range []struct {
		name  string
		set   func(*Settings)
		field string
	}{
		{"one zone", func(s *Settings) { s.Zones = 1 }, "zones"},
		{"more zones than groups", func(s *Settings) { s.Zones = MaxZones + 1 }, "zones"},
		{"two nodes a zone", func(s *Settings) { s.NodesPerZone = 2 }, "nodes_per_zone"},
		{"no volumes", func(s *Settings) { s.VolumesPerNode = 0 }, "volumes_per_node"},
		{"negative spare", func(s *Settings) { s.SpareSlots = -1 }, "spare_slots"},
		{"write bigger than a volume", func(s *Settings) { s.VolumeKiB, s.WriteBytes = 1, 2048 }, "write_bytes"},
		{"backoff cap under its base", func(s *Settings) { s.SearchBackoffMax = lab.Duration(time.Millisecond) }, "search_backoff_max"},
		{"no backoff", func(s *Settings) { s.SearchBackoff, s.SearchBackoffMax = 0, 0 }, "search_backoff"},
		{"unknown pool", func(s *Settings) { s.Pool = "regional" }, "pool"},
		{"a zone without a worker", func(s *Settings) { s.Pool, s.PoolWorkers = ebscontrol.PerZone, 2 }, "pool_workers"},
		{"no create load", func(s *Settings) { s.CreateRate = 0 }, "create_rate"},
		{"create timeout zero", func(s *Settings) { s.CreateTimeout = 0 }, "create_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSettings()
			tc.set(s)
			require.Equal(t, []string{tc.field}, fields(s.Check()))
		})
	}
}

func TestFactsNameTheMitigations(t *testing.T) {
	s := NewSettings()
	s.Pool, s.PoolWorkers, s.SearchJitter = ebscontrol.PerZone, 12, true
	s.SearchBackoffMax = lab.Duration(5 * time.Second)
	got := map[string]string{}
	for _, f := range s.Facts() {
		got[f.Name] = f.Value
	}
	require.Contains(t, got["Control plane"], "a pool per zone, 4 workers each")
	require.Contains(t, got["Search back-off"], "doubling to 5s")
	require.Contains(t, got["Search back-off"], "jitter")
}

func TestToxicsBothWays(t *testing.T) {
	tx := toxicsFor(LinkToxics{Latency: 300 * time.Millisecond, BandwidthKBps: 2})
	var got []string
	for _, x := range tx {
		got = append(got, x.Name)
	}
	require.Equal(t, []string{"latency_upstream", "bandwidth_upstream", "latency_downstream", "bandwidth_downstream"}, got)
	require.Equal(t, int64(300), tx[0].Attributes["latency"])
}

// A zone's links through the in-process proxy: a timeout toxic stops an
// echo on an open connection, and the connection works again once the
// zone's links are restored.
func TestZoneLinksDegradeAndRestore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	l := NewLinks()
	defer l.Close()
	// A node in a container: its proxy exists before its address is known.
	addr, err := l.Add("zone-a", "a1", "127.0.0.1", "127.0.0.1:1")
	require.NoError(t, err)
	require.NoError(t, l.SetUpstream("a1", ln.Addr().String()))
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	br := bufio.NewReader(c)
	echo := func(wait time.Duration) error {
		_ = c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		_, err := br.ReadByte()
		return err
	}
	require.NoError(t, echo(time.Second))
	z := &Zone{name: "zone-a", links: l}
	require.NoError(t, z.DegradeLinks(context.Background(), LinkToxics{Latency: 2 * time.Second, BandwidthKBps: 2}))
	require.Error(t, echo(300*time.Millisecond), "2 s of latency misses a 300 ms deadline")
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(make([]byte, 64<<10)) // half a minute queued at 2 KB/s
	start := time.Now()
	require.NoError(t, z.RestoreLinks(context.Background()))
	require.Less(t, time.Since(start), 3*time.Second, "restoring does not wait for the queued data")
	c2, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(time.Second))
	_, err = c2.Write([]byte("y"))
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = io.ReadFull(c2, b)
	require.NoError(t, err)
	require.Equal(t, "y", string(b))
	require.Error(t, (&Zone{name: "zone-b", links: l}).DegradeLinks(context.Background(), LinkToxics{Latency: time.Second}), "no links in zone-b")
}

// A user's callers are judged by the control plane's counts between the
// samples at the fault and at the end, the zones kept.
func TestEndedOKBetweenSamples(t *testing.T) {
	cc := []createCount{
		{T: 1, Zones: map[string][2]int64{"zone-a": {2, 2}, "zone-b": {2, 2}}},
		{T: 10, Zones: map[string][2]int64{"zone-a": {10, 9}, "zone-b": {10, 10}}},
		{T: 20, Zones: map[string][2]int64{"zone-a": {20, 9}, "zone-b": {30, 25}}},
	}
	other := func(z string) bool { return z != "zone-a" }
	require.InDelta(t, 15.0/20, endedOK(cc, other, 10.5, 20), 1e-9)
	require.InDelta(t, 0.0, endedOK(cc, func(z string) bool { return z == "zone-a" }, 10.5, 20), 1e-9)
	require.InDelta(t, 19.0/20, endedOK(cc, func(string) bool { return true }, -1, 10), 1e-9, "before the first sample counts from zero")
	require.True(t, math.IsNaN(endedOK(cc, other, 20, 20)), "no call ended: not measured")
}
