package servers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Member is a server as a member of its system's cluster and a fault
// target: the generic faults act through its placement's Server, its
// role is asked of its system.
type Member struct {
	lab.Server
	// RoleOf asks the server what it is now (leader, follower...).
	RoleOf func(ctx context.Context, s lab.Server) (string, error)
	// Gate, when set, is one probe of the replace fault's gate (a
	// system's protocol: synced with the leader...).
	Gate func(ctx context.Context, s lab.Server, gate string) error
	// Replacing, when set, readies a replacement the way the system's
	// operators do (an etcd member removed and added again, the fresh
	// server's configuration rewritten) before the placement replaces it.
	Replacing func(ctx context.Context, s lab.Server) error
	// Env records the member's events on the variant's timeline.
	Env *lab.Env
}

// Replace stands a fresh server in for the member: the system readies it
// (Replacing), the placement replaces it; it returns once it serves.
func (m *Member) Replace(ctx context.Context) error {
	if m.Replacing != nil {
		if err := m.Replacing(ctx, m.Server); err != nil {
			return fmt.Errorf("replace %s: %w", m.Name(), err)
		}
	}
	return m.Server.Replace(ctx)
}

// Name is the server's name ("probe" for a member with no server behind
// it, asked before anything starts which faults it takes).
func (m *Member) Name() string {
	if m.Server == nil {
		return "probe"
	}
	return m.Server.Name()
}

// Role asks the system.
func (m *Member) Role(ctx context.Context) (string, error) {
	if m.RoleOf == nil {
		return "", errors.New("no role")
	}
	return m.RoleOf(ctx, m.Server)
}

// Restart starts the server again with its data (killed first if it
// runs) and returns once it serves.
func (m *Member) Restart(ctx context.Context) error {
	if m.Running() {
		if err := m.Kill(); err != nil {
			return err
		}
	}
	return m.Start(ctx)
}

// LimitCPU and CPULimit: the cpu-throttle fault.
func (m *Member) LimitCPU(cores float64) error     { return m.SetCPU(cores) }
func (m *Member) CPULimit() (float64, error)       { return m.CPU() }
func (m *Member) SetMemoryLimit(bytes int64) error { return m.SetMemory(int(bytes >> 20)) }

// MemoryLimit is the limit in force, in bytes (negative when it cannot be
// read now).
func (m *Member) MemoryLimit() int64 {
	if m.Server == nil {
		return -1
	}
	mb, err := m.Memory()
	if err != nil {
		return -1
	}
	return int64(mb) << 20
}

// GateCheck is one probe of the replace fault's gate.
func (m *Member) GateCheck(ctx context.Context, gate string) error {
	if m.Gate == nil {
		if gate == "none" {
			return nil
		}
		return fmt.Errorf("check gate %s: %s has none", gate, m.Name())
	}
	return m.Gate(ctx, m.Server, gate)
}

// Event puts a fault's event on the variant's timeline.
func (m *Member) Event(kind, source, detail string) {
	if m.Env != nil {
		m.Env.Event(kind, source, detail)
	}
}

// Render makes a server's program for its layout, given every server's
// layout (its peers).
type Render func(l lab.ServerLayout, all []lab.ServerLayout) (lab.ServerProgram, error)

// StartAll lays out the servers of specs on site, renders each one's
// program once every layout is known, and starts them together; it
// returns once each serves. On failure every server started is stopped.
func StartAll(ctx context.Context, site lab.Site, specs []lab.ServerSpec, render Render) ([]lab.Server, error) {
	ss := site
	layouts := make([]lab.ServerLayout, len(specs))
	for i, sp := range specs {
		l, err := ss.Layout(sp)
		if err != nil {
			return nil, err
		}
		layouts[i] = l
	}
	progs := make([]lab.ServerProgram, len(specs))
	for i, l := range layouts {
		p, err := render(l, layouts)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", l.Name, err)
		}
		progs[i] = p
	}
	out := make([]lab.Server, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i := range layouts {
		wg.Go(func() { out[i], errs[i] = ss.StartServer(ctx, layouts[i], progs[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		StopAll(out)
		return nil, err
	}
	return out, nil
}

// StopAll stops every server (nil ones skipped), together.
func StopAll(ss []lab.Server) {
	var wg sync.WaitGroup
	for _, s := range ss {
		if s != nil {
			wg.Go(func() { s.Stop(0) })
		}
	}
	wg.Wait()
}

// Members are ms as a cluster gives them.
func Members[M lab.Member](ms []M) []lab.Member {
	out := make([]lab.Member, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// DataDirs are the data folders of ms on this machine (a container's
// data goes with it).
func DataDirs[M interface{ Layout() lab.ServerLayout }](ms []M) []string {
	var out []string
	for _, m := range ms {
		if d := m.Layout().HostDataDir; d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Close stops every one of ms together (their site removes what is left).
func Close[M interface {
	Stop(time.Duration) lab.ProcExit
}](ms []M) error {
	var wg sync.WaitGroup
	for _, m := range ms {
		wg.Go(func() { m.Stop(0) })
	}
	wg.Wait()
	return nil
}

// Binary builds (or finds in the cache) a server's binary where the
// placement runs programs of this machine, and records its version
// there; "" where it runs images.
func Binary(ctx context.Context, p lab.Placement, log *slog.Logger, name, version string, build func(context.Context, images.Options) (string, error)) (string, error) {
	if !lab.RunsHostCommands(p) {
		return "", nil
	}
	bin, err := build(ctx, images.Options{Progress: lab.LogWriter{Log: log}})
	if err != nil {
		return "", fmt.Errorf("prepare %s: %w", name, err)
	}
	lab.RecordVersion(p, name, version+" ("+bin+")")
	return bin, nil
}
