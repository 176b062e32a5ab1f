package pgcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/procfs"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Lag is one replica's replication state, as the primary sees it
// (pg_stat_replication joined to the replica's slot) and as the replica
// itself says (pg_last_xact_replay_timestamp).
type Lag struct {
	Replica string
	// State is the walsender's state at the primary ("streaming",
	// "catchup"; "" when the replica is not connected).
	State string
	// Bytes is how far replay is behind the primary's current WAL position.
	Bytes int64
	// ReplayLag is pg_stat_replication.replay_lag (0 when idle).
	ReplayLag time.Duration
	// SinceReplay is now() minus the replica's last replayed transaction's
	// commit time: what GitLab's load balancer checked against ~60 s. It
	// grows on an idle primary too; CaughtUp tells the two apart.
	SinceReplay time.Duration
	// CaughtUp: the replica has replayed everything it received.
	CaughtUp bool
	// Err is why the replica could not be asked (down, paused).
	Err error
}

// Lags asks the primary about every replica's slot and each replica
// about its replay, each within 2 s; a replica that does not answer has
// Err set.
func (c *Cluster) Lags(ctx context.Context) ([]Lag, error) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := c.primary.pool.Query(pctx, `
		SELECT s.slot_name, coalesce(r.state, ''),
		       coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), coalesce(r.replay_lsn, s.restart_lsn)), 0)::bigint,
		       coalesce(extract(epoch FROM r.replay_lag), 0)::float8
		FROM pg_replication_slots s LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid`)
	if err != nil {
		return nil, fmt.Errorf("read replication: %w", err)
	}
	bySlot := map[string]Lag{}
	for rows.Next() {
		var slot string
		var l Lag
		var lag float64
		if err := rows.Scan(&slot, &l.State, &l.Bytes, &lag); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read replication: %w", err)
		}
		l.ReplayLag = time.Duration(lag * float64(time.Second))
		bySlot[slot] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read replication: %w", err)
	}
	out := make([]Lag, 0, len(c.replicas))
	for _, r := range c.replicas {
		l := bySlot[r.slot]
		l.Replica = r.Name()
		var since float64
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		l.Err = r.pool.QueryRow(rctx, `
			SELECT coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)::float8,
			       coalesce(pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn(), false)`).Scan(&since, &l.CaughtUp)
		rcancel()
		l.SinceReplay = time.Duration(since * float64(time.Second))
		out = append(out, l)
	}
	return out, nil
}

// WaitStreaming waits until every replica's walsender at the primary is
// streaming, or ctx ends.
func (c *Cluster) WaitStreaming(ctx context.Context) error {
	var last error
	for {
		ls, err := c.Lags(ctx)
		if err == nil {
			for _, l := range ls {
				if l.State != "streaming" {
					err = fmt.Errorf("%s is %q", l.Replica, l.State)
					break
				}
			}
		}
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for streaming: %w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Metrics are one server's load at one moment. Counters are cumulative.
type Metrics struct {
	// Connections are client backends (the harness's own query excluded);
	// Active those running a query now (pg_stat_activity state 'active').
	Connections, Active int
	// Xact and tuple counters summed over databases (pg_stat_database).
	XactCommit, XactRollback                                     int64
	TupReturned, TupFetched, TupInserted, TupUpdated, TupDeleted int64
	// CPUSeconds is the CPU the postmaster and its backends used: its
	// own, its reaped children's (cutime, cstime) and its live children's,
	// from /proc.
	CPUSeconds float64
}

// Metrics reads the server's load (within 2 s).
func (s *Server) Metrics(ctx context.Context) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var m Metrics
	err := s.pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())::int,
		       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid())::int,
		       sum(xact_commit)::bigint, sum(xact_rollback)::bigint, sum(tup_returned)::bigint, sum(tup_fetched)::bigint,
		       sum(tup_inserted)::bigint, sum(tup_updated)::bigint, sum(tup_deleted)::bigint
		FROM pg_stat_database`).Scan(&m.Connections, &m.Active, &m.XactCommit, &m.XactRollback,
		&m.TupReturned, &m.TupFetched, &m.TupInserted, &m.TupUpdated, &m.TupDeleted)
	if err != nil {
		return m, fmt.Errorf("read metrics of %s: %w", s.Name(), err)
	}
	if pid := s.Pid(); pid > 0 && s.Running() {
		m.CPUSeconds, err = treeCPU(pid)
		if err != nil {
			return m, fmt.Errorf("read metrics of %s: %w", s.Name(), err)
		}
	}
	return m, nil
}

// treeCPU is the CPU seconds of process pid, of its reaped children and
// of its live children.
func treeCPU(pid int) (float64, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	ticks := float64(st.UTime+st.STime) + float64(st.CUTime+st.CSTime)
	all, err := fs.AllProcs()
	if err != nil {
		return 0, err
	}
	for _, q := range all {
		qs, err := q.Stat()
		if err != nil || qs.PPID != pid {
			continue
		}
		ticks += float64(qs.UTime + qs.STime)
	}
	return ticks / userHZ, nil
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	all, err := fs.AllProcs()
	if err != nil {
		return nil
	}
	var out []int
	for _, q := range all {
		if st, err := q.Stat(); err == nil && st.PPID == pid {
			out = append(out, q.PID)
		}
	}
	return out
}

// userHZ is the kernel's clock ticks per second in /proc (USER_HZ).
const userHZ = 100

// ping asks a server whether it answers (a connection and a ping, within
// the deadline of ctx).
func ping(ctx context.Context, s lab.Server) error {
	host, port, _ := strings.Cut(s.Addr("pg", lab.FromHost), ":")
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable connect_timeout=2", host, port))
	if err != nil {
		return fmt.Errorf("ping %s: %w", s.Name(), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}
