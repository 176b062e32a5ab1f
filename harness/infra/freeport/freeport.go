// Package freeport picks free TCP ports on the loopback interface for
// servers the lab starts as local processes.
package freeport

import (
	"fmt"
	"net"
)

// Loopback returns n distinct TCP ports free on 127.0.0.1 at the time of the
// call. The listeners that found them are closed before it returns, so a
// port can in principle be taken by someone else before the caller binds it.
func Loopback(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
