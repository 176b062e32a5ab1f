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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoslab/chaoslab/harness/freeport"
	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// DefaultStartTimeout bounds Start when its context has no deadline.
const DefaultStartTimeout = 2 * time.Minute

var errPortInUse = errors.New("port already in use")

// pickPorts is freeport.Loopback; tests replace it to force a collision.
var pickPorts = freeport.Loopback

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
	for id := 1; id <= o.members(); id++ {
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
			o.Logger.Info("zkensemble: healthy", "members", o.Servers, "observers", o.Observers, "dir", o.Dir, "took", time.Since(started).Round(time.Millisecond))
			return e, nil
		}
		if attempt == 1 && errors.Is(err, errPortInUse) && ctx.Err() == nil {
			o.Logger.Warn("zkensemble: port collision, retrying with new ports", "err", err)
			for id := 1; id <= o.members(); id++ {
				_ = os.RemoveAll(filepath.Join(o.Dir, memberName(id), "data"))
			}
			continue
		}
		return nil, err
	}
}

func memberName(id int) string { return "zk" + strconv.Itoa(id) }

func startOnce(ctx context.Context, o Options) (*Ensemble, error) {
	n := o.members()
	ports, err := pickPorts(4 * n)
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	e := &Ensemble{Dir: o.Dir, opts: o, log: o.Logger}
	var peers []peer
	for i := range n {
		peers = append(peers, peer{ID: i + 1, PeerPort: ports[4*i+2], ElectionPort: ports[4*i+3], Observer: i >= o.Servers})
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
			Observer:     id > o.Servers,
			ens:          e,
			logPath:      filepath.Join(o.Dir, "logs", name+".log"),
		}
		cfg := memberConfig{
			TickMS: o.TickMS, InitLimit: o.InitLimit, SyncLimit: o.SyncLimit,
			MaxClientCnxns: o.MaxClientCnxns, DataDir: m.DataDir,
			ClientPort: ports[4*i], AdminPort: ports[4*i+1], Extra: o.Extra,
			Observer: m.Observer,
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

// check is the ensemble as harness/zkcheck's health rules see it.
func (e *Ensemble) check() zkcheck.Ensemble[*Member] {
	return zkcheck.Ensemble[*Member]{
		Members:  func() []*Member { return e.Members },
		Name:     nameOf,
		ID:       memberID,
		RunState: func(_ context.Context, m *Member) (bool, bool) { return m.Running(), m.Paused() },
		Mntr:     func(ctx context.Context, m *Member) (map[string]string, error) { return m.Mntr(ctx) },
	}
}

func nameOf(m *Member) string { return m.Name }
func memberID(m *Member) int  { return m.ID }

// Leader asks every running, non-paused member for its state and returns
// the leader once exactly one member says so on zkcheck.StablePolls
// consecutive polls. It retries until ctx ends.
func (e *Ensemble) Leader(ctx context.Context) (*Member, error) {
	return e.check().Leader(ctx)
}

// Followers waits for a stable leader (see Leader) and returns the members
// that then report "follower".
func (e *Ensemble) Followers(ctx context.Context) ([]*Member, error) {
	return e.check().Followers(ctx)
}

// WaitHealthy waits until every running member answers mntr, none is
// paused, exactly one is leader and all others follow (and the leader counts
// them as synced), the same on zkcheck.StablePolls consecutive polls. The
// error names the members that are not healthy.
func (e *Ensemble) WaitHealthy(ctx context.Context) error {
	_, err := e.waitHealthy(ctx)
	return err
}

func (e *Ensemble) waitHealthy(ctx context.Context) ([]*Member, error) {
	return e.check().WaitHealthy(ctx)
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
