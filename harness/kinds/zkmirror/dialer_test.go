package zkmirror

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// The first connection is at once; with a jitter, every later one waits a
// random time under it, and the waits differ.
func TestDialerJittersReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	m := &Mirror{ctx: context.Background(), cfg: Config{Seed: 7, Client: Client{ReconnectJitter: lab.Duration(300 * time.Millisecond)}}}
	dial := m.dialer()
	took := func() time.Duration {
		start := time.Now()
		c, err := dial("tcp", ln.Addr().String(), time.Second)
		require.NoError(t, err)
		c.Close()
		return time.Since(start)
	}
	require.Less(t, took(), 100*time.Millisecond, "the first connection waits for nothing")
	var waits []time.Duration
	for range 4 {
		d := took()
		require.Less(t, d, 400*time.Millisecond)
		waits = append(waits, d.Round(10*time.Millisecond))
	}
	slices.Sort(waits)
	require.Greater(t, len(slices.Compact(waits)), 1, "random waits: %v", waits)

	m.cfg.ReconnectJitter = 0
	dial = m.dialer()
	took()
	require.Less(t, took(), 100*time.Millisecond, "no jitter: reconnects at once")
}
