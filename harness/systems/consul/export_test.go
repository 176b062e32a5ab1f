package consul

import "github.com/chaoslab/chaoslab/harness/lab"

// NodeAddrs are a node's HTTP and DNS addresses as the harness reaches
// them ("" when there is no such node).
func NodeAddrs(c lab.Cluster, name string) (httpAddr, dnsAddr string) {
	for _, m := range c.(*cluster).members {
		if m.Name() == name {
			return m.Addr("http", lab.FromHost), m.Addr("dns", lab.FromHost)
		}
	}
	return "", ""
}
