package kubernetes

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// relay is a server's ports on 127.0.0.1, the same for its life (across
// its pods and their port forwards): each connection is passed to the
// current `kubectl port-forward` of its pod. kubectl ends a forward when
// one of its connections fails (a port the server does not listen on
// yet), so the forward is started again whenever it ends while the pod
// runs; a connection made meanwhile waits for it a little.
type relay struct {
	lns   map[int]net.Listener // the pod's port -> its listener here
	k     kubectl
	ns    string
	ports []int

	mu      sync.Mutex
	pod     string // "" while no pod runs
	fwd     *forward
	changed chan struct{} // closed when fwd or pod changes
	closed  bool
	failing string // why the last forward could not start
	// restarts counts the forwards that ended while the pod ran; lastEnd
	// is what the last one said.
	restarts int
	lastEnd  string
	// cut: the server is cut off from its node's network; a connection
	// is refused at once (its forward would fail at the cut, and the
	// relay's waits for a forward would carry it past the cut).
	cut bool
}

// setCut says whether the server is cut off now.
func (r *relay) setCut(cut bool) {
	r.mu.Lock()
	r.cut = cut
	r.mu.Unlock()
}

func (r *relay) isCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// ended says how many forwards ended while their pod ran, and why the
// last one did.
func (r *relay) ended() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts, r.lastEnd
}

// newRelay listens on 127.0.0.1 for each of ports.
func newRelay(k kubectl, ns string, ports []int) (*relay, error) {
	r := &relay{lns: map[int]net.Listener{}, k: k, ns: ns, ports: ports, changed: make(chan struct{})}
	for _, p := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.close()
			return nil, err
		}
		r.lns[p] = ln
		go r.serve(ln, p)
	}
	return r, nil
}

// addr is where the harness reaches a port of the pod.
func (r *relay) addr(remote int) string {
	if ln, ok := r.lns[remote]; ok {
		return ln.Addr().String()
	}
	return net.JoinHostPort("127.0.0.1", "0")
}

// attach forwards to pod from now on (until detach), starting the
// forward again whenever it ends; it returns once the first forward is
// up, or failed.
func (r *relay) attach(pod string) error {
	r.mu.Lock()
	r.pod = pod
	r.mu.Unlock()
	go r.supervise(pod)
	_, err := r.current(30 * time.Second)
	return err
}

// detach stops forwarding (the pod goes).
func (r *relay) detach() {
	r.mu.Lock()
	r.pod = ""
	f := r.fwd
	r.fwd = nil
	r.signalLocked()
	r.mu.Unlock()
	f.stop()
}

func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.detach()
	for _, ln := range r.lns {
		_ = ln.Close()
	}
}

func (r *relay) signalLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// supervise keeps a forward to pod up while it is attached.
func (r *relay) supervise(pod string) {
	for {
		r.mu.Lock()
		if r.pod != pod || r.closed {
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		f, err := startForward(context.Background(), r.k, r.ns, pod, r.ports)
		r.mu.Lock()
		if r.pod != pod || r.closed {
			r.mu.Unlock()
			f.stop()
			return
		}
		if err != nil {
			r.failing = err.Error()
		} else {
			r.fwd, r.failing = f, ""
		}
		r.signalLocked()
		r.mu.Unlock()
		if f != nil {
			<-f.done
			r.mu.Lock()
			r.restarts++
			r.lastEnd = f.said()
			r.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		} else {
			time.Sleep(time.Second)
		}
	}
}

// current is the forward up now, waiting up to d for one.
func (r *relay) current(d time.Duration) (*forward, error) {
	deadline := time.After(d)
	for {
		r.mu.Lock()
		f, ch, pod, why := r.fwd, r.changed, r.pod, r.failing
		r.mu.Unlock()
		if pod == "" {
			return nil, errNoPod
		}
		if f != nil && f.port(r.ports[0]) != 0 {
			return f, nil
		}
		select {
		case <-ch:
		case <-deadline:
			if why == "" {
				why = "no forward"
			}
			return nil, &forwardError{why}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serve passes each connection to a port to the pod's port remote.
func (r *relay) serve(ln net.Listener, remote int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if r.isCut() {
				return
			}
			f, err := r.current(3 * time.Second)
			if err != nil {
				return
			}
			up, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.port(remote))), 5*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				if tc, ok := up.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, up)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			<-done
		}()
	}
}

type forwardError struct{ why string }

func (e *forwardError) Error() string { return "port-forward: " + e.why }

var errNoPod = &forwardError{"no pod runs"}
