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
