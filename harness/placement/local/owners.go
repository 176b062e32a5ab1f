package local

import (
	"strings"

	"github.com/chaoslab/chaoslab/harness/infra/sockets"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Owners maps a client address (ip:port, as a server sees the connection)
// to the program whose process holds that socket: every TCP socket of the
// processes in each program's cgroup, from /proc, at the moment of the call.
func (s *Site) Owners() func(remote string) lab.Proc {
	byAddr := map[string]lab.Proc{}
	s.mu.Lock()
	procs := append([]*proc(nil), s.procs...)
	s.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
			continue
		default:
		}
		pids, err := p.g.Procs()
		if err != nil || len(pids) == 0 {
			pids = []int{p.cmd.Process.Pid}
		}
		for _, a := range sockets.Local(pids) {
			byAddr[a] = p
		}
	}
	return func(remote string) lab.Proc {
		if p, ok := byAddr[strings.TrimPrefix(remote, "/")]; ok {
			return p
		}
		return nil
	}
}
