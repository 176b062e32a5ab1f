package etcd

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/chaoslab/chaoslab/harness/dockeretcd"
	"github.com/chaoslab/chaoslab/harness/etcdlocal"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/placement/container"
)

func startLocal(ctx context.Context, env *lab.Env, bin string, t *Topology) (lab.Cluster, error) {
	if bin == "" {
		return nil, fmt.Errorf("start etcd: no server binary (the system was not prepared)")
	}
	logs := &lab.LogFiles{Dir: env.LogDir}
	data := filepath.Join(env.Dir, "etcd-data")
	lc, err := etcdlocal.Start(ctx, etcdlocal.Options{Members: t.Members, Binary: bin, Dir: data, Logger: env.Log, Logs: logs.Writer})
	closeAll := func() error {
		var err error
		if lc != nil {
			err = lc.Close()
		}
		logs.Close()
		return err
	}
	if err != nil {
		_ = closeAll()
		_ = os.RemoveAll(data)
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	var ms []member
	for _, m := range lc.Members() {
		ms = append(ms, &localMember{Member: m})
	}
	c, err := newCluster(env, ms, lc.Endpoints(), lc.Endpoints(), lc.WaitHealthy, closeAll)
	if err != nil {
		_ = closeAll()
		_ = os.RemoveAll(data)
		return nil, err
	}
	c.data = []string{data}
	return c, nil
}

// localMember is one etcd process.
type localMember struct {
	*etcdlocal.Member
	c *cluster
}

func (m *localMember) endpoint() string { return m.Endpoint() }

func (m *localMember) Role(ctx context.Context) (string, error) {
	r, _, err := m.c.role(ctx, m.Endpoint())
	return r, err
}

func startDocker(ctx context.Context, env *lab.Env, site *container.Site, t *Topology) (lab.Cluster, error) {
	dc, err := dockeretcd.StartCluster(ctx, dockeretcd.Options{Members: t.Members, Image: site.Image(Name), RunID: env.RunID,
		Network: site.Network(), LogDir: env.LogDir, Logger: env.Log})
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	// Programs on the network reach etcd by address: no name lookups
	// through the engine's DNS, which is busy while dozens of containers
	// start.
	var ms []member
	var siteURLs []string
	for _, m := range dc.Members() {
		ip, err := m.Container().IP(ctx, dc.Network())
		if err != nil || !ip.IsValid() {
			_ = dc.Close()
			return nil, fmt.Errorf("find address of %s: %v", m.Name(), err)
		}
		siteURLs = append(siteURLs, "http://"+net.JoinHostPort(ip.String(), "2379"))
		ms = append(ms, &dockerMember{Member: m})
	}
	c, err := newCluster(env, ms, dc.Endpoints(), siteURLs, dc.WaitHealthy, dc.Close)
	if err != nil {
		_ = dc.Close()
		return nil, err
	}
	return c, nil
}

// dockerMember is one etcd container; the container faults find their
// methods on it.
type dockerMember struct {
	*dockeretcd.Member
	c *cluster
}

func (m *dockerMember) endpoint() string { return m.Endpoint() }

func (m *dockerMember) Role(ctx context.Context) (string, error) {
	r, _, err := m.c.role(ctx, m.Endpoint())
	return r, err
}
