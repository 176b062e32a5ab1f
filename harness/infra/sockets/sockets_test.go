package sockets

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The local addresses of this process's TCP sockets, both ends of a
// connection to itself and its listener, are read from /proc.
func TestLocalListsAProcessSockets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	got := Local([]int{os.Getpid()})
	require.Contains(t, got, ln.Addr().String())
	require.Contains(t, got, c.LocalAddr().String())
	require.Empty(t, Local([]int{1 << 30}), "a process that is not there holds nothing")
}
