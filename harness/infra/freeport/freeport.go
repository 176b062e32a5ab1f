// Package freeport picks free TCP ports on the loopback interface for
// servers the lab starts as local processes.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports are picked below the kernel's ephemeral range, where no outgoing
// connection gets its local port: a port picked from the ephemeral range
// (a listener on port 0) could be taken by any client's connect between
// the pick and the server's bind, and was (an etcd peer port, "address
// already in use", while a run's own clients were connecting).
const (
	floor     = 10000 // the lowest port picked
	rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
	tries     = 200
	// remembered is how many of the ports handed out last are not handed
	// out again (a run's servers, and the next runs' of a --repeat).
	remembered = 4096
)

var (
	mu     sync.Mutex
	given  = map[int]bool{} // the ports in recent
	recent []int
)

// hand marks p handed out, forgetting the oldest beyond remembered.
func hand(p int) {
	given[p] = true
	recent = append(recent, p)
	if len(recent) > remembered {
		delete(given, recent[0])
		recent = recent[1:]
	}
}

// Loopback returns n distinct TCP ports free on 127.0.0.1 at the time of
// the call, none among the last ports this process handed out, below the ephemeral
// range when there is room there (else from it). The listeners that found
// them are closed before it returns, so another program could still bind
// a port first; an outgoing connection cannot.
func Loopback(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	top := ephemeralStart()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := pick(top)
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		p := l.Addr().(*net.TCPAddr).Port
		hand(p)
		ports = append(ports, p)
	}
	return ports, nil
}

// pick listens on a free port under top, or on any port if none is found.
func pick(top int) (net.Listener, error) {
	for range tries {
		if top <= floor {
			break
		}
		p := floor + rand.IntN(top-floor)
		if given[p] {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			return l, nil
		}
	}
	for range tries {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick free port: %w", err)
		}
		if !given[l.Addr().(*net.TCPAddr).Port] {
			return l, nil
		}
		_ = l.Close()
	}
	return nil, fmt.Errorf("pick free port: every port tried was taken")
}

// ephemeralStart is the first port of the kernel's ephemeral range
// (32768 when it cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	p, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return p
}
