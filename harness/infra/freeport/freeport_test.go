package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopbackPortsAreDistinctAndBindable(t *testing.T) {
	ports, err := Loopback(5)
	require.NoError(t, err)
	require.Len(t, ports, 5)
	seen := map[int]bool{}
	for _, p := range ports {
		require.False(t, seen[p], "port %d twice", p)
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d is free once Loopback returned", p)
		require.NoError(t, l.Close())
	}
}

// Ports come from below the ephemeral range, where no client's connect
// takes its local port, and are not handed out twice.
func TestLoopbackPortsAreBelowTheEphemeralRange(t *testing.T) {
	top := ephemeralStart()
	if top <= floor+1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it", top)
	}
	seen := map[int]bool{}
	for range 50 {
		ports, err := Loopback(4)
		require.NoError(t, err)
		for _, p := range ports {
			require.Less(t, p, top)
			require.GreaterOrEqual(t, p, floor)
			require.False(t, seen[p], "port %d handed out twice", p)
			seen[p] = true
		}
	}
}
