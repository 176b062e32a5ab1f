package zookeeper

import (
	"context"
	"fmt"

	"github.com/chaoslab/chaoslab/harness/dockerzk"
	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/placement/container"
)

func startDocker(ctx context.Context, env *lab.Env, site *container.Site, t *Topology) (lab.Cluster, error) {
	ens, err := dockerzk.StartEnsemble(ctx, dockerzk.EnsembleOptions{
		Servers: t.Servers, Observers: t.Observers, Image: site.Image(Name), TickMS: t.TickMS, InitLimit: t.InitLimit, SyncLimit: t.SyncLimit,
		HeapMB: t.HeapMB, MaxClientCnxns: t.MaxClientCnxns, RunID: env.RunID, Network: site.Network(),
		LogDir: env.LogDir, Logger: env.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	de := &dockerEnsemble{ens: ens, share: &cpuShare{}, env: env}
	var logs []string
	for _, m := range ens.Members() {
		de.ms = append(de.ms, &dockerMember{Member: m, e: de})
		logs = append(logs, m.LogPath())
	}
	de.logs = newLogCounter(logs)
	c := &cluster{ens: de, env: env}
	return &limitedCluster{cluster: c, cores: t.CPUQuota}, nil
}

// dockerEnsemble is dockerzk's containers; CPU limits are the engine's.
type dockerEnsemble struct {
	ens   *dockerzk.Ensemble
	share *cpuShare
	ms    []*dockerMember
	env   *lab.Env
	logs  *logCounter // the containers' output, copied to the run's log folder
}

// logSample: what the servers' logs say, counted since the start.
func (e *dockerEnsemble) logSample(t float64) lab.MemberSample { return e.logs.sample(t) }

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

var (
	_ faults.Replacer      = (*dockerMember)(nil)
	_ faults.Gater         = (*dockerMember)(nil)
	_ faults.EventRecorder = (*dockerMember)(nil)
)

// dockerMember is one server container; the container faults (replace,
// disconnect, cpu-throttle) find their methods on it.
type dockerMember struct {
	*dockerzk.Member
	e *dockerEnsemble // nil for a probe
}

func (m *dockerMember) Role(ctx context.Context) (string, error) { return m.ServerState(ctx) }

// Restart puts the container back under the CPU limit.
func (m *dockerMember) Restart(ctx context.Context) error {
	if err := m.Member.Restart(ctx); err != nil {
		return err
	}
	return m.hold()
}

// Replace stands a fresh container in for the member (same id, alias and
// settings, empty data dir, started under the CPU limit) and returns once
// it answers ruok, before it has synced, as a local server's Replace
// returns once the process is started (see GateCheck).
func (m *dockerMember) Replace(ctx context.Context) error {
	if err := m.Member.ReplaceStarted(ctx); err != nil {
		return err
	}
	return m.hold()
}

// GateCheck is one probe of the replace fault's gate (shallow, deep).
func (m *dockerMember) GateCheck(ctx context.Context, gate string) error {
	if m.e == nil {
		return fmt.Errorf("check gate: %s is a probe", m.Name())
	}
	return gateCheck(ctx, m, m.e.members(), gate)
}

// Event puts a fault's event on the variant's timeline.
func (m *dockerMember) Event(kind, source, detail string) {
	if m.e != nil && m.e.env != nil {
		m.e.env.Event(kind, source, detail)
	}
}

// hold puts the container under the ensemble's CPU limit unless it is.
func (m *dockerMember) hold() error {
	if m.e == nil {
		return nil
	}
	cores := m.e.share.get()
	if cores <= 0 {
		return nil
	}
	if cur, err := m.Member.CPULimit(); err == nil && cur == cores {
		return nil
	}
	return m.Member.LimitCPU(cores)
}
