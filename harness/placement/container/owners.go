package container

import (
	"net"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Owners maps a client address (ip:port, as a server sees the connection)
// to the container whose address it is on the variant's network.
func (s *Site) Owners() func(remote string) lab.Proc {
	byIP := map[string]lab.Proc{}
	s.mu.Lock()
	for _, p := range s.procs {
		select {
		case <-p.done:
		default:
			byIP[p.Host()] = p
		}
	}
	s.mu.Unlock()
	return func(remote string) lab.Proc {
		host, _, err := net.SplitHostPort(strings.TrimPrefix(remote, "/"))
		if err != nil {
			return nil
		}
		return byIP[host]
	}
}
