package zookeeper

import (
	"context"
	"fmt"

	"github.com/chaoslab/chaoslab/harness/dockerzk"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/placement/container"
)

func startDocker(ctx context.Context, env *lab.Env, site *container.Site, t *Topology) (lab.Cluster, error) {
	if t.Observers > 0 {
		return nil, fmt.Errorf("start ensemble: observers: %d asked, but observers run on the local placement only for now", t.Observers)
	}
	ens, err := dockerzk.StartEnsemble(ctx, dockerzk.EnsembleOptions{
		Servers: t.Servers, Image: site.Image(Name), TickMS: t.TickMS, InitLimit: t.InitLimit, SyncLimit: t.SyncLimit,
		HeapMB: t.HeapMB, MaxClientCnxns: t.MaxClientCnxns, RunID: env.RunID, Network: site.Network(),
		LogDir: env.LogDir, Logger: env.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	de := &dockerEnsemble{ens: ens, share: &cpuShare{}}
	for _, m := range ens.Members() {
		de.ms = append(de.ms, &dockerMember{Member: m, share: de.share})
	}
	c := &cluster{ens: de, env: env}
	return &limitedCluster{cluster: c, cores: t.CPUQuota}, nil
}

// dockerEnsemble is dockerzk's containers; CPU limits are the engine's.
type dockerEnsemble struct {
	ens   *dockerzk.Ensemble
	share *cpuShare
	ms    []*dockerMember
}

func (e *dockerEnsemble) members() []zkMember {
	out := make([]zkMember, len(e.ms))
	for i, m := range e.ms {
		out[i] = m
	}
	return out
}

// endpoints: the harness uses the ports published on 127.0.0.1, programs
// on the variant's network the members' names.
func (e *dockerEnsemble) endpoints(v lab.View) []string {
	if v == lab.FromHost {
		return e.ens.Servers()
	}
	var out []string
	for _, m := range e.ms {
		out = append(out, m.Name()+":2181")
	}
	return out
}

func (e *dockerEnsemble) leader(ctx context.Context) (zkMember, error) {
	l, err := e.ens.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return e.ms[l.ID()-1], nil
}

func (e *dockerEnsemble) waitHealthy(ctx context.Context) error { return e.ens.WaitHealthy(ctx) }

func (e *dockerEnsemble) limitCPU(cores float64) error {
	e.share.set(cores)
	for _, m := range e.ms {
		if err := m.Member.LimitCPU(cores); err != nil {
			return fmt.Errorf("limit server cpu: %s: %w", m.Name(), err)
		}
	}
	return nil
}

func (e *dockerEnsemble) close() error { return e.ens.Close() }

// dockerMember is one server container; the container faults (replace,
// disconnect, cpu-throttle) find their methods on it.
type dockerMember struct {
	*dockerzk.Member
	share *cpuShare
}

func (m *dockerMember) Role(ctx context.Context) (string, error) { return m.ServerState(ctx) }

// Restart and Replace put a new container back under the CPU limit.
func (m *dockerMember) Restart(ctx context.Context) error {
	if err := m.Member.Restart(ctx); err != nil {
		return err
	}
	return m.hold()
}

func (m *dockerMember) Replace(ctx context.Context) error {
	if err := m.Member.Replace(ctx); err != nil {
		return err
	}
	return m.hold()
}

func (m *dockerMember) hold() error {
	cores := m.share.get()
	if cores <= 0 {
		return nil
	}
	if cur, err := m.Member.CPULimit(); err == nil && cur == cores {
		return nil
	}
	return m.Member.LimitCPU(cores)
}
