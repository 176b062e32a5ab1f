package consul

import "github.com/chaoslab/chaoslab/harness/lab"

// NodeAddrs are a local node's HTTP and DNS addresses ("" when there is
// no such local node).
func NodeAddrs(c lab.Cluster, name string) (httpAddr, dnsAddr string) {
	for _, m := range c.(*cluster).members {
		if n, ok := m.node.(*localNode); ok && n.Name() == name {
			return n.HTTPAddr(), n.DNSAddr()
		}
	}
	return "", ""
}
