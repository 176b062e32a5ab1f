package dblb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/consul"
)

// A user's app pods (Contract) run as programs, one per client agent; what
// they do is counted outside them: the statements they send the primary
// by a proxy of the lab's on their way, those they send a replica by the
// replica's own statement log under their role, their lookups at their
// pod's forwarder.

// Preflight: a user's app pod that is a command of this host runs only
// where host commands do; on containers it runs from its image, told
// where the run's network reaches its forwarder and its proxy.
func (kind) Preflight(p lab.Placement, s lab.Settings) error {
	if st := s.(*Settings); st.Program != nil && st.Program.Image == "" && !lab.RunsHostCommands(p) {
		return fmt.Errorf("your app pod is a command of this host, which the %s placement cannot run: give its image too (--client-image, or program.image)", p.Name())
	}
	if err := lab.ReachesController(p); s.(*Settings).Program != nil && err != nil {
		return fmt.Errorf("your app pods ask their agents through the lab's forwarders: %w", err)
	}
	return nil
}

// programSeed prepares PostgreSQL for the user's pods: one role per pod,
// allowed to read and write the table, whose statements every server logs
// as they start (log_statement, set on the role: the lab's own queries are
// not logged).
func (w *workload) programSeed(ctx context.Context) error {
	p := w.pg.Primary().Pool()
	dns, err := consul.AgentDNSAddrs(w.cluster)
	if err != nil {
		return fmt.Errorf("prepare pod roles: %w", err)
	}
	for i := range dns {
		role := podRole(i)
		if _, err := p.Exec(ctx, fmt.Sprintf(`CREATE ROLE %[1]s LOGIN; ALTER ROLE %[1]s SET log_statement = 'all'; GRANT SELECT, UPDATE, INSERT ON items TO %[1]s`, role)); err != nil {
			return fmt.Errorf("prepare pod roles: %w", err)
		}
	}
	for _, srv := range w.pg.Replicas() {
		w.stmtLogs = append(w.stmtLogs, srv.StatementLog(rolePrefix))
	}
	return nil
}

// startPrograms starts the user's app pods, pod i asking dns[i] and
// reaching the primary through a proxy of its own that counts what it
// sends there.
func (w *workload) startPrograms(ctx context.Context, host string, dns []string) error {
	w.arrived = make([][]arrivals, 1+len(w.stmtLogs))
	for j := range w.arrived {
		w.arrived[j] = make([]arrivals, len(dns))
	}
	primary := make([]string, len(dns))
	for i := range dns {
		px, err := startPGProxy(host, w.pg.Primary().Addr(), func(at time.Time, write bool) { w.atPrimary(i, at, write) })
		if err != nil {
			return err
		}
		w.proxies = append(w.proxies, px)
		primary[i] = px.Addr()
	}
	rng := w.env.Rand(206)
	seeds := make([]uint64, len(dns))
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	w.group = instances.Start(ctx, instances.Config{
		Env: w.env, Count: len(dns), Prefix: "pod", Role: "app-pod", Restart: true, RestartDelay: time.Second,
		Program: func(i, inc int) lab.Program {
			return w.s.Program.Program(w.programEnv(i, inc, dns[i], primary[i], seeds[i]))
		},
	})
	return nil
}

// atPrimary counts a statement pod i sent to the primary.
func (w *workload) atPrimary(i int, at time.Time, write bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if write {
		w.arrived[0][i].writes++
		w.rec.sent(at, 0, 0, 1)
		return
	}
	w.arrived[0][i].reads++
	w.rec.sent(at, 1, 0, 0)
}

// arrivals counts one pod's statements at one server: reads, writes.
type arrivals struct{ reads, writes int64 }

// readStatements reads the statements each replica logged since the last
// sample and records them at the second they started, and returns the
// counts so far: arrived[server][pod], the primary (server 0) counted by
// the pods' proxies. Called under w.mu.
func (w *workload) readStatements() [][]arrivals {
	pods := len(w.fwds)
	for k, l := range w.stmtLogs {
		sts, err := l.Read()
		if err != nil {
			w.env.Log.Warn("read statements", "err", err)
			continue
		}
		for _, st := range sts {
			i, err := strconv.Atoi(strings.TrimPrefix(st.Role, rolePrefix))
			if err != nil || i < 1 || i > pods {
				continue
			}
			c := &w.arrived[k+1][i-1]
			if st.Write { // a replica refuses it; counted all the same
				c.writes++
				w.rec.sent(st.At, 0, 0, 1)
				continue
			}
			c.reads++
			w.rec.sent(st.At, 0, 1, 0)
		}
	}
	out := make([][]arrivals, len(w.arrived))
	for j := range w.arrived {
		out[j] = slices.Clone(w.arrived[j])
	}
	return out
}

// programSteady counts the pods whose reads reached a replica between the
// last two samples.
func (w *workload) programSteady() lab.Steady {
	st := lab.Steady{Total: len(w.fwds), What: "app pods reading at a replica (counted at the replicas)"}
	w.mu.Lock()
	defer w.mu.Unlock()
	var last [][]arrivals
	for i := len(w.samples) - 1; i >= 0; i-- {
		cur := w.samples[i].arrived
		if cur == nil {
			continue
		}
		if last == nil {
			last = cur
			continue
		}
		for p := range st.Total {
			for j := 1; j < len(cur); j++ {
				if last[j][p].reads > cur[j][p].reads {
					st.Ready++
					break
				}
			}
		}
		break
	}
	return st
}
