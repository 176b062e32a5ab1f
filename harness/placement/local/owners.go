package local

import (
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Owners maps a client address (ip:port, as a server sees the connection)
// to the program whose process holds that socket: every TCP socket of the
// processes in each program's cgroup, from /proc, at the moment of the call.
func (s *Site) Owners() func(remote string) lab.Proc {
	byAddr := map[string]lab.Proc{}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return func(string) lab.Proc { return nil }
	}
	addrOf := socketAddrs(fs)
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
		for _, pid := range pids {
			pr, err := fs.Proc(pid)
			if err != nil {
				continue
			}
			targets, err := pr.FileDescriptorTargets()
			if err != nil {
				continue
			}
			for _, t := range targets {
				ino, ok := strings.CutPrefix(t, "socket:[")
				if !ok {
					continue
				}
				n, err := strconv.ParseUint(strings.TrimSuffix(ino, "]"), 10, 64)
				if a, found := addrOf[n]; err == nil && found {
					byAddr[a] = p
				}
			}
		}
	}
	return func(remote string) lab.Proc {
		if p, ok := byAddr[strings.TrimPrefix(remote, "/")]; ok {
			return p
		}
		return nil
	}
}

// socketAddrs maps a TCP socket's inode to its local address.
func socketAddrs(fs procfs.FS) map[uint64]string {
	out := map[uint64]string{}
	add := func(lines procfs.NetTCP) {
		for _, l := range lines {
			out[l.Inode] = net.JoinHostPort(l.LocalAddr.String(), strconv.FormatUint(l.LocalPort, 10))
		}
	}
	if v4, err := fs.NetTCP(); err == nil {
		add(v4)
	}
	if v6, err := fs.NetTCP6(); err == nil {
		add(v6)
	}
	return out
}
