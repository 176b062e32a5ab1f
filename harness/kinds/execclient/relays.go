package execclient

import (
	"errors"
	"fmt"

	"github.com/chaoslab/chaoslab/harness/infra/clientproxy"
	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// relays are a relay per instance in front of the servers, on systems
// whose servers do not list their client connections (etcd, Consul): what
// the servers see of each instance is counted on its way there.
type relays []*clientproxy.Client

// startRelays starts them where the system's clients can be relayed and
// the instances run on this host (nil otherwise).
func startRelays(env *lab.Env, c lab.Cluster, n int) (relays, error) {
	rc, ok := c.(lab.RelayedCluster)
	if !ok || !lab.RunsHostCommands(env.Site.Placement()) {
		return nil, nil
	}
	out := make(relays, 0, n)
	for range n {
		r, err := clientproxy.New(rc.ClientAddrs())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start relays: %w", err), out.close())
		}
		out = append(out, r)
	}
	env.Event("note", "harness", "each client reaches the servers through a relay of its own on loopback, which counts its connections and requests")
	return out, nil
}

// env is what instance i is told to reach the servers.
func (r relays) env(c lab.Cluster, i int) map[string]string {
	if rc, ok := c.(lab.RelayedCluster); ok && i < len(r) {
		return rc.ClientEnvVia(i, r[i].Via)
	}
	return c.ClientEnv(lab.FromSite, i)
}

func (r relays) counter() instances.Counter {
	if len(r) == 0 {
		return nil
	}
	return r
}

// Counts: what instance i's relay counted.
func (r relays) Counts(i int) (connections, requests, outstanding float64) {
	n := r[i].Counts()
	return float64(n.Connections), float64(n.Requests), float64(n.Outstanding)
}

func (r relays) close() error {
	var errs []error
	for _, c := range r {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
