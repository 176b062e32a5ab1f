package zookeeper

import (
	"context"
	"fmt"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/placement/local"
	"github.com/chaoslab/chaoslab/harness/zkensemble"
)

func startLocal(ctx context.Context, env *lab.Env, site *local.Site, t *Topology) (lab.Cluster, error) {
	ens, err := zkensemble.Start(ctx, zkensemble.Options{
		Servers: t.Servers, Observers: t.Observers, TickMS: t.TickMS, InitLimit: t.InitLimit, SyncLimit: t.SyncLimit,
		HeapMB: t.HeapMB, MaxClientCnxns: t.MaxClientCnxns, Dir: env.Dir, Logger: env.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	le := &localEnsemble{ens: ens, mgr: site.Limits(), share: &cpuShare{}, env: env}
	var logs []string
	for _, m := range ens.Members {
		le.ms = append(le.ms, &localMember{Member: m, e: le})
		logs = append(logs, m.LogPath())
	}
	le.logs = newLogCounter(logs)
	c := &cluster{ens: le, env: env}
	return &limitedCluster{cluster: c, cores: t.CPUQuota}, nil
}

// localEnsemble is zkensemble's processes; CPU limits are cgroups.
type localEnsemble struct {
	ens   *zkensemble.Ensemble
	mgr   *limits.Manager
	share *cpuShare
	ms    []*localMember
	env   *lab.Env
	logs  *logCounter
}

func (e *localEnsemble) members() []zkMember {
	out := make([]zkMember, len(e.ms))
	for i, m := range e.ms {
		out[i] = m
	}
	return out
}

// logSample: what the servers' logs say, counted since the start.
func (e *localEnsemble) logSample(t float64) lab.MemberSample { return e.logs.sample(t) }

func (e *localEnsemble) endpoints(lab.View) []string { return e.ens.Servers() }

func (e *localEnsemble) leader(ctx context.Context) (zkMember, error) {
	l, err := e.ens.Leader(ctx)
	if err != nil {
		return nil, err
	}
	return e.ms[l.ID-1], nil
}

func (e *localEnsemble) waitHealthy(ctx context.Context) error { return e.ens.WaitHealthy(ctx) }

func (e *localEnsemble) limitCPU(cores float64) error {
	e.share.set(cores)
	for _, m := range e.ms {
		if err := m.hold(); err != nil {
			return err
		}
	}
	return nil
}

func (e *localEnsemble) close() error { return e.ens.Close() }

// dataDirs are the members' data directories (snapshots, transaction
// logs), in the run folder.
func (e *localEnsemble) dataDirs() []string {
	var out []string
	for _, m := range e.ens.Members {
		out = append(out, m.DataDir)
	}
	return out
}

var (
	_ faults.Replacer      = (*localMember)(nil)
	_ faults.Gater         = (*localMember)(nil)
	_ faults.EventRecorder = (*localMember)(nil)
)

// localMember is one server process.
type localMember struct {
	*zkensemble.Member
	e *localEnsemble
}

func (m *localMember) Name() string { return m.Member.Name }

func (m *localMember) Role(ctx context.Context) (string, error) { return m.State(ctx) }

// Restart starts the server again and puts it back under its CPU limit.
func (m *localMember) Restart(ctx context.Context) error {
	if err := m.Member.Restart(ctx); err != nil {
		return err
	}
	return m.hold()
}

// Replace stands a fresh server in for the member (same id and address,
// empty data dir) and puts it under the CPU limit; it returns once the
// process is started, before it has synced (see GateCheck).
func (m *localMember) Replace(ctx context.Context) error {
	if err := m.Member.Replace(ctx); err != nil {
		return err
	}
	return m.hold()
}

// GateCheck is one probe of the replace fault's gate (shallow, deep).
func (m *localMember) GateCheck(ctx context.Context, gate string) error {
	if m.e == nil {
		return fmt.Errorf("check gate: %s is a probe", m.Member.Name)
	}
	return gateCheck(ctx, m, m.e.members(), gate)
}

// Event puts a fault's event on the variant's timeline.
func (m *localMember) Event(kind, source, detail string) {
	if m.e != nil && m.e.env != nil {
		m.e.env.Event(kind, source, detail)
	}
}

// hold puts the member's process in its CPU group (a restarted process
// has a new pid).
func (m *localMember) hold() error {
	cores := m.e.share.get()
	if cores <= 0 || m.PID() <= 0 {
		return nil
	}
	g := m.e.mgr.Group(m.Member.Name)
	if g == nil {
		var err error
		if g, err = m.e.mgr.NewGroup(m.Member.Name, limits.Limits{CPUCores: cores}); err != nil {
			return fmt.Errorf("limit server cpu: %w", err)
		}
	}
	if g.Contains(m.PID()) {
		return nil
	}
	if err := g.Add(m.PID()); err != nil {
		return fmt.Errorf("limit server cpu: %s: %w", m.Member.Name, err)
	}
	return nil
}
