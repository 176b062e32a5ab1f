package container

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// The addresses a server's cons listed in a docker replay of IL-0587: the
// clients' containers by their address on the variant's network, and the
// network's gateway for the harness's own connections (seed, writer,
// four-letter words through the published ports). A restarted client gets
// an address a killed one had.
func TestOwners(t *testing.T) {
	dead := make(chan struct{})
	close(dead)
	killed := &proc{name: "client-08-0", ip: "172.20.0.12", done: dead}
	c5 := &proc{name: "client-05-1", ip: "172.20.0.12", done: make(chan struct{})}
	c9 := &proc{name: "client-09-0", ip: "172.20.0.9", done: make(chan struct{})}
	s := &Site{procs: []*proc{c9, killed, c5}}
	owner := s.Owners()
	for remote, want := range map[string]lab.Proc{
		"172.20.0.9:35312":  c9,
		"/172.20.0.9:35312": c9,
		"172.20.0.12:57492": c5,
		"172.20.0.1:51196":  nil,
		"172.20.0.77:4000":  nil,
		"172.20.0.9":        nil,
	} {
		got := owner(remote)
		if want == nil {
			require.Nil(t, got, remote)
			continue
		}
		require.Same(t, want, got, remote)
	}
}
