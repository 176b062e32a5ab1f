// Package zkensemble runs a real ZooKeeper ensemble as local JVM processes
// on 127.0.0.1, in the style of go-zookeeper/zk's test cluster and consul's
// sdk/testutil: free ports, a run folder with one zoo.cfg and data dir per
// member, output routed to log files, readiness checks over the mntr
// four-letter word, and fault injection (SIGSTOP/SIGCONT, SIGKILL,
// restart) on processes this package started — and only on those.
//
// It uses Debian's ZooKeeper 3.8 jars (see DefaultClasspath and
// EnsureInstalled).
//
// Every JVM runs in its own process group with Pdeathsig SIGKILL, so a
// crashed harness leaks no servers. Linux ties Pdeathsig to the OS thread
// that started the child: do not call Start or Restart from a goroutine
// that holds runtime.LockOSThread and exits without unlocking.
package zkensemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStartTimeout bounds Start when its context has no deadline.
const DefaultStartTimeout = 2 * time.Minute

// Polling of Leader and WaitHealthy: an answer counts once it was seen on
// stablePolls consecutive polls pollInterval apart (just after a paused
// leader is resumed two servers both say "leader" for about a second).
const (
	stablePolls  = 3
	pollInterval = 300 * time.Millisecond
)

var errPortInUse = errors.New("port already in use")

// pickPorts is freePorts; tests replace it to force a collision.
var pickPorts = freePorts

// Ensemble is a running set of ZooKeeper servers started by Start.
type Ensemble struct {
	Members []*Member // Members[i].ID == i+1
	Dir     string    // run folder

	opts Options
	log  *slog.Logger

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Start writes a zoo.cfg per member into o.Dir, starts every member as its
// own JVM process and waits until every member serves and one stable leader
// exists, all others following. The wait ends with ctx (DefaultStartTimeout
// if ctx has no deadline). On failure everything started is stopped and the
// error carries the tail of the failing members' logs. A port taken between
// picking and binding is retried once with new ports.
func Start(ctx context.Context, o Options) (*Ensemble, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "zkensemble-"); err != nil {
			return nil, fmt.Errorf("start ensemble: create run dir: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("start ensemble: create log dir: %w", err)
	}
	for id := 1; id <= o.Servers; id++ {
		data := filepath.Join(o.Dir, memberName(id), "data")
		if ok, err := dirEmpty(data); err != nil || !ok {
			if err == nil {
				err = errors.New("not empty")
			}
			return nil, fmt.Errorf("start ensemble: check %s: %w", data, err)
		}
	}
	started := time.Now()
	for attempt := 1; ; attempt++ {
		e, err := startOnce(ctx, o)
		if err == nil {
			o.Logger.Info("zkensemble: healthy", "members", o.Servers, "dir", o.Dir, "took", time.Since(started).Round(time.Millisecond))
			return e, nil
		}
		if attempt == 1 && errors.Is(err, errPortInUse) && ctx.Err() == nil {
			o.Logger.Warn("zkensemble: port collision, retrying with new ports", "err", err)
			for id := 1; id <= o.Servers; id++ {
				_ = os.RemoveAll(filepath.Join(o.Dir, memberName(id), "data"))
			}
			continue
		}
		return nil, err
	}
}

func memberName(id int) string { return "zk" + strconv.Itoa(id) }

func startOnce(ctx context.Context, o Options) (*Ensemble, error) {
	n := o.Servers
	ports, err := pickPorts(4 * n)
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	e := &Ensemble{Dir: o.Dir, opts: o, log: o.Logger}
	var peers []peer
	for i := range n {
		peers = append(peers, peer{ID: i + 1, PeerPort: ports[4*i+2], ElectionPort: ports[4*i+3]})
	}
	for i := range n {
		id := i + 1
		name := memberName(id)
		dir := filepath.Join(o.Dir, name)
		m := &Member{
			ID:           id,
			Name:         name,
			ClientAddr:   addr(ports[4*i]),
			AdminAddr:    addr(ports[4*i+1]),
			PeerAddr:     addr(ports[4*i+2]),
			ElectionAddr: addr(ports[4*i+3]),
			Dir:          dir,
			DataDir:      filepath.Join(dir, "data"),
			ConfigPath:   filepath.Join(dir, "zoo.cfg"),
			ens:          e,
			logPath:      filepath.Join(o.Dir, "logs", name+".log"),
		}
		cfg := memberConfig{
			TickMS: o.TickMS, InitLimit: o.InitLimit, SyncLimit: o.SyncLimit,
			MaxClientCnxns: o.MaxClientCnxns, DataDir: m.DataDir,
			ClientPort: ports[4*i], AdminPort: ports[4*i+1], Extra: o.Extra,
		}
		if n > 1 {
			cfg.Peers = peers
		}
		if err := writeMemberFiles(m.ConfigPath, m.DataDir, id, cfg); err != nil {
			return nil, fmt.Errorf("start ensemble: %s: %w", name, err)
		}
		e.Members = append(e.Members, m)
	}
	for _, m := range e.Members {
		if err := m.start(); err != nil {
			_ = e.Close()
			return nil, fmt.Errorf("start ensemble: start %s: %w", m.Name, err)
		}
	}
	err = e.waitAllServing(ctx)
	var bad []*Member
	if err == nil {
		bad, err = e.waitHealthy(ctx)
	}
	if err == nil {
		return e, nil
	}
	var tails []string
	for _, m := range bad {
		tails = append(tails, m.logTail(20))
	}
	collision := errors.Is(err, errPortInUse)
	for _, m := range e.Members {
		collision = collision || m.logContains(bindError)
	}
	_ = e.Close()
	if len(tails) > 0 {
		err = fmt.Errorf("%w\n%s", err, strings.Join(tails, "\n"))
	}
	if collision && !errors.Is(err, errPortInUse) {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return nil, fmt.Errorf("start ensemble: %w", err)
}

func addr(port int) string { return loopback + ":" + strconv.Itoa(port) }

// waitAllServing waits until every member serves; the first failure (a
// member exiting, or ctx ending) cancels the rest.
func (e *Ensemble) waitAllServing(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, m := range e.Members {
		wg.Go(func() {
			if err := m.waitServing(ctx); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	return first
}

// Servers returns the members' client addresses ("127.0.0.1:port").
func (e *Ensemble) Servers() []string {
	out := make([]string, len(e.Members))
	for i, m := range e.Members {
		out[i] = m.ClientAddr
	}
	return out
}

// ConnectString returns the client addresses joined by commas.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Servers(), ",") }

// Options returns the options the ensemble runs with, defaults filled in.
func (e *Ensemble) Options() Options { return e.opts }

// status is one member's answer in one poll.
type status struct {
	m       *Member
	running bool
	paused  bool
	kv      map[string]string
	state   string
	err     error
}

func (s status) String() string {
	switch {
	case !s.running:
		return s.m.Name + "=not running"
	case s.paused:
		return s.m.Name + "=paused"
	case s.err != nil:
		if errors.Is(s.err, ErrNotServing) {
			return s.m.Name + "=not serving"
		}
		return s.m.Name + "=error(" + s.err.Error() + ")"
	}
	return s.m.Name + "=" + s.state
}

// poll asks every running, non-paused member for mntr at the same time,
// each with a deadline of at most DefaultProbeTimeout.
func (e *Ensemble) poll(ctx context.Context) []status {
	out := make([]status, len(e.Members))
	var wg sync.WaitGroup
	for i, m := range e.Members {
		out[i] = status{m: m, running: m.Running(), paused: m.Paused()}
		if !out[i].running || out[i].paused {
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
			defer cancel()
			kv, err := m.Mntr(pctx)
			out[i].kv, out[i].err = kv, err
			if err == nil {
				out[i].state = kv["zk_server_state"]
			}
		})
	}
	wg.Wait()
	return out
}

func summary(sts []status) string {
	parts := make([]string, len(sts))
	for i, s := range sts {
		parts[i] = s.String()
	}
	return strings.Join(parts, " ")
}

// leaderOf returns the one member that says leader (or standalone).
func leaderOf(sts []status) (*Member, error) {
	var leaders []string
	var leader *Member
	for _, s := range sts {
		if s.err == nil && (s.state == StateLeader || s.state == StateStandalone) {
			leaders = append(leaders, s.m.Name)
			leader = s.m
		}
	}
	switch len(leaders) {
	case 1:
		return leader, nil
	case 0:
		return nil, fmt.Errorf("no leader (%s)", summary(sts))
	}
	return nil, fmt.Errorf("%d leaders %s (%s)", len(leaders), strings.Join(leaders, ","), summary(sts))
}

// Leader asks every running, non-paused member for its state and returns
// the leader once exactly one member says so on stablePolls consecutive
// polls. It retries until ctx ends.
func (e *Ensemble) Leader(ctx context.Context) (*Member, error) {
	var cand *Member
	streak := 0
	var last error
	for {
		l, err := leaderOf(e.poll(ctx))
		switch {
		case err != nil:
			cand, streak, last = nil, 0, err
		case l == cand:
			streak++
		default:
			cand, streak = l, 1
		}
		if streak >= stablePolls {
			return cand, nil
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("leader not yet stable")
			}
			return nil, fmt.Errorf("find leader: %w: %w", last, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// Followers waits for a stable leader (see Leader) and returns the members
// that then report "follower".
func (e *Ensemble) Followers(ctx context.Context) ([]*Member, error) {
	l, err := e.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("find followers: %w", err)
	}
	var out []*Member
	for _, s := range e.poll(ctx) {
		if s.m != l && s.err == nil && s.state == StateFollower {
			out = append(out, s.m)
		}
	}
	return out, nil
}

// WaitHealthy waits until every running member answers mntr, none is
// paused, exactly one is leader and all others follow (and the leader counts
// them as synced), the same on stablePolls consecutive polls. The error
// names the members that are not healthy.
func (e *Ensemble) WaitHealthy(ctx context.Context) error {
	_, err := e.waitHealthy(ctx)
	return err
}

func (e *Ensemble) waitHealthy(ctx context.Context) ([]*Member, error) {
	var cand *Member
	streak := 0
	for {
		sts := e.poll(ctx)
		l, bad, problem := health(sts)
		switch {
		case problem != "":
			cand, streak = nil, 0
		case l == cand:
			streak++
		default:
			cand, streak = l, 1
		}
		if streak >= stablePolls {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			if problem == "" {
				problem = "leader " + l.Name + " not yet stable"
			}
			return bad, fmt.Errorf("wait healthy: %s: %w", problem, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// health judges one poll: it returns the leader, or the members that are
// not healthy and a description.
func health(sts []status) (*Member, []*Member, string) {
	var bad []*Member
	var probs []string
	running, followers := 0, 0
	var leader *status
	for i, s := range sts {
		if !s.running {
			continue
		}
		running++
		switch {
		case s.paused, s.err != nil:
			bad = append(bad, s.m)
			probs = append(probs, s.String())
		case s.state == StateLeader || s.state == StateStandalone:
			if leader != nil {
				bad = append(bad, leader.m, s.m)
				probs = append(probs, fmt.Sprintf("two leaders %s and %s", leader.m.Name, s.m.Name))
			}
			leader = &sts[i]
		case s.state == StateFollower:
			followers++
		default:
			bad = append(bad, s.m)
			probs = append(probs, s.String())
		}
	}
	if running == 0 {
		return nil, nil, "no member running"
	}
	if leader == nil && len(probs) == 0 {
		probs = append(probs, "no leader ("+summary(sts)+")")
	}
	if len(probs) == 0 && leader.state == StateLeader {
		if v, ok := leader.kv["zk_synced_followers"]; ok {
			if synced, err := strconv.Atoi(v); err == nil && synced < followers {
				bad = append(bad, leader.m)
				probs = append(probs, fmt.Sprintf("%s: leader has %d synced followers, %d members follow", leader.m.Name, synced, followers))
			}
		}
	}
	if len(probs) > 0 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].ID < bad[j].ID })
		return nil, dedup(bad), strings.Join(probs, "; ")
	}
	return leader.m, nil, ""
}

func dedup(ms []*Member) []*Member {
	out := ms[:0]
	for i, m := range ms {
		if i == 0 || m != ms[i-1] {
			out = append(out, m)
		}
	}
	return out
}

// Close resumes and SIGKILLs every member's process group this package
// started, waits until the JVMs have exited and joins the errors. The run
// folder (data and logs) is kept. Close is idempotent and stops Restart
// from starting anything again.
func (e *Ensemble) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		errs := make([]error, len(e.Members))
		var wg sync.WaitGroup
		for i, m := range e.Members {
			wg.Go(func() {
				if err := m.stop(); err != nil && !errors.Is(err, ErrNotRunning) {
					errs[i] = fmt.Errorf("stop %s: %w", m.Name, err)
				}
			})
		}
		wg.Wait()
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}
