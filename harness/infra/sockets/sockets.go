// Package sockets reads which local TCP addresses processes hold, from
// /proc: how a placement tells which of its programs a server's client
// connection belongs to.
package sockets

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// Local returns the local address (ip:port) of every TCP socket the
// processes pids hold, each read in the process's own network namespace
// (/proc/PID/net/tcp), at the moment of the call. Processes gone by then
// are left out.
func Local(pids []int) []string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	var out []string
	byNetns := map[string]map[uint64]string{}
	for _, pid := range pids {
		pr, err := fs.Proc(pid)
		if err != nil {
			continue
		}
		ns, _ := pr.Namespaces()
		key := ""
		if n, ok := ns["net"]; ok {
			key = strconv.FormatUint(uint64(n.Inode), 10)
		}
		addrOf, ok := byNetns[key]
		if !ok {
			addrOf = tcpAddrs(pid)
			byNetns[key] = addrOf
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
				out = append(out, a)
			}
		}
	}
	return out
}

// tcpAddrs maps a TCP socket's inode to its local address, in pid's
// network namespace.
func tcpAddrs(pid int) map[uint64]string {
	out := map[uint64]string{}
	fs, err := procfs.NewFS(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		return out
	}
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
