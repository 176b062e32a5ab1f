// Package zkcheck holds what harness/zkensemble (local processes) and
// harness/dockerzk (containers) share about ZooKeeper servers: the
// four-letter-word client (FourLetter, ParseMntr, Serving) and the health
// rules that judge an ensemble (exactly one stable leader, all others
// following), so that the same rules judge both backends.
package zkcheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// DefaultProbeTimeout bounds a four-letter-word exchange when the context
// has no deadline. A SIGSTOPped server accepts the TCP connection (the kernel
// does) but never answers, and a paused container's published port accepts
// it too (docker-proxy does) with nobody answering, so every probe needs a
// deadline.
const DefaultProbeTimeout = time.Second

// ErrNotServing is returned by Mntr when the server answers but is not
// serving requests (it is looking for a leader or syncing).
var ErrNotServing = errors.New("not currently serving requests")

// Server states as reported in mntr's zk_server_state.
const (
	StateLeader     = "leader"
	StateFollower   = "follower"
	StateObserver   = "observer"
	StateStandalone = "standalone"
)

// FourLetter sends a four-letter word to addr and returns the whole answer.
// The deadline comes from ctx, or DefaultProbeTimeout when ctx has none.
func FourLetter(ctx context.Context, addr, cmd string) (string, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultProbeTimeout)
	}
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	// Cancellation of ctx (not only its deadline) must end the exchange.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", fmt.Errorf("set deadline: %w", err)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("send %s: %w", cmd, err)
	}
	// Nothing more to send, as `echo mntr | nc` says it: a forwarder in
	// between (kubectl port-forward) closes the server's side, and so
	// ends the answer, only once both sides are closed.
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("read %s: %w", cmd, ctx.Err())
		}
		return "", fmt.Errorf("read %s: %w", cmd, err)
	}
	return string(out), nil
}

// ParseMntr parses the answer of the mntr four-letter word: one
// "key<TAB>value" per line. A server that is not serving answers with a
// sentence instead; that gives ErrNotServing.
func ParseMntr(s string) (map[string]string, error) {
	if strings.Contains(s, "not currently serving requests") {
		return nil, ErrNotServing
	}
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			// Be lenient with space-separated output.
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			k, v = f[0], strings.Join(f[1:], " ")
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan mntr: %w", err)
	}
	if len(m) == 0 {
		// docker-proxy accepts the connection of a container that is not
		// listening (yet) and closes it without a word.
		return nil, fmt.Errorf("parse mntr: empty answer %q", Truncate(s, 200))
	}
	if _, ok := m["zk_server_state"]; !ok {
		return nil, fmt.Errorf("parse mntr: no zk_server_state in %q", Truncate(s, 200))
	}
	return m, nil
}

// Truncate shortens s to n bytes, marking a cut with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Serving reports whether a zk_server_state means the server serves clients.
func Serving(state string) bool {
	switch state {
	case StateLeader, StateFollower, StateObserver, StateStandalone:
		return true
	}
	return false
}
