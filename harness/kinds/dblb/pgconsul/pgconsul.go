// Package pgconsul registers a pgcluster's replicas at a Consul agent as
// instances of one service, each with a TTL check the lab keeps up to
// date from the replica's replication lag, so that DNS at the agent
// (replica.patroni.service.consul, SRV) answers the healthy, up-to-date
// replicas only, as GitLab's database load balancer asked its pod's agent.
//
// A TTL check rather than a script check (off by default in Consul) or an
// HTTP check (a server the lab would have to run): the lab reads the lags
// (pgcluster.Cluster.Lags) every period and sets each check passing or
// critical; if the lab stops, the checks go critical after the TTL.
package pgconsul

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// Defaults: GitLab's names and the load balancer's bounds.
const (
	DefaultService = "patroni"
	DefaultTag     = "replica"
	// DefaultMaxBytes and DefaultMaxDelay: GitLab's load balancer used a
	// replica whose replay was less than 8 MB or 60 s behind.
	DefaultMaxBytes = 8 << 20
	DefaultMaxDelay = 60 * time.Second
	DefaultEvery    = time.Second
	// MinEvery bounds the update period: every update is a write to the
	// agent (and, on a status change, to the servers).
	MinEvery = 100 * time.Millisecond
)

// Lagger is what Register reads: a pgcluster.Cluster.
type Lagger interface {
	Replicas() []*pgcluster.Server
	Lags(ctx context.Context) ([]pgcluster.Lag, error)
}

// Option configures a registration.
type Option func(*options)

type options struct {
	service, tag string
	maxBytes     int64
	maxDelay     time.Duration
	every        time.Duration
	log          *slog.Logger
}

// WithService names the service and the tag the replicas carry (default
// patroni and replica: DNS name replica.patroni.service.consul).
func WithService(name, tag string) Option {
	return func(o *options) { o.service, o.tag = name, tag }
}

// WithMaxLag sets the bounds: a replica is healthy while its replay is
// less than maxBytes or maxDelay behind (GitLab's rule), or caught up.
func WithMaxLag(maxBytes int64, maxDelay time.Duration) Option {
	return func(o *options) { o.maxBytes, o.maxDelay = maxBytes, maxDelay }
}

// WithEvery sets how often the checks are updated (the TTL is 3 periods).
func WithEvery(d time.Duration) Option { return func(o *options) { o.every = d } }

// WithLogger sends status changes to l.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

func (o options) check() error {
	switch {
	case o.service == "":
		return errors.New("no service name")
	case o.maxBytes <= 0 || o.maxDelay <= 0:
		return fmt.Errorf("lag bounds %d bytes, %s: want both above 0", o.maxBytes, o.maxDelay)
	case o.every < MinEvery:
		return fmt.Errorf("update period %s is below %s: every update is a write to the agent", o.every, MinEvery)
	}
	return nil
}

// Status is one replica's check as last set.
type Status struct {
	Replica string
	ID      string // the service instance's id
	Host    string // the replica's address (127.0.0.1, or its container's)
	Port    int
	Status  string // api.HealthPassing or api.HealthCritical
	Output  string
}

// Registration is the replicas registered at one agent, kept up to date
// until Close.
type Registration struct {
	o      options
	agent  *api.Client
	c      Lagger
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	status []Status

	closeOnce sync.Once
	closeErr  error
}

// Register registers every replica of c at agent and sets its check once
// before it returns; the checks are then updated every period until Close.
func Register(ctx context.Context, agent *api.Client, c Lagger, opts ...Option) (*Registration, error) {
	o := options{service: DefaultService, tag: DefaultTag, maxBytes: DefaultMaxBytes, maxDelay: DefaultMaxDelay, every: DefaultEvery, log: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("register replicas: %w", err)
	}
	r := &Registration{o: o, agent: agent, c: c, done: make(chan struct{})}
	for _, s := range c.Replicas() {
		st := Status{Replica: s.Name(), ID: o.service + "-" + s.Name(), Host: s.Host(), Port: s.Port(), Status: api.HealthCritical}
		if err := r.registerOne(st); err != nil {
			return nil, errors.Join(err, r.deregister())
		}
		r.status = append(r.status, st)
	}
	if err := r.update(ctx); err != nil {
		return nil, errors.Join(err, r.deregister())
	}
	lctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.loop(lctx)
	return r, nil
}

func (r *Registration) registerOne(st Status) error {
	var tags []string
	if r.o.tag != "" {
		tags = []string{r.o.tag}
	}
	reg := &api.AgentServiceRegistration{
		ID: st.ID, Name: r.o.service, Tags: tags, Address: st.Host, Port: st.Port,
		Meta: map[string]string{"replica": st.Replica},
		Check: &api.AgentServiceCheck{CheckID: checkID(st.ID), Name: "replication lag of " + st.Replica,
			TTL: (3 * r.o.every).String(), Status: api.HealthCritical},
	}
	if err := r.agent.Agent().ServiceRegister(reg); err != nil {
		return fmt.Errorf("register %s: %w", st.ID, err)
	}
	return nil
}

func checkID(serviceID string) string { return serviceID + "-lag" }

func (r *Registration) loop(ctx context.Context) {
	defer close(r.done)
	lab.Every(ctx, r.o.every, func() {
		if err := r.update(ctx); err != nil && ctx.Err() == nil {
			r.o.log.Warn("pgconsul: update checks", "err", err)
		}
	})
}

// update reads the lags and sets every check.
func (r *Registration) update(ctx context.Context) error {
	lags, err := r.c.Lags(ctx)
	if err != nil {
		return errors.Join(fmt.Errorf("update checks: %w", err), r.keep(err))
	}
	byName := map[string]pgcluster.Lag{}
	for _, l := range lags {
		byName[l.Replica] = l
	}
	r.mu.Lock()
	sts := append([]Status(nil), r.status...)
	r.mu.Unlock()
	var errs []error
	for i, st := range sts {
		l, ok := byName[st.Replica]
		status, out := Judge(l, r.o.maxBytes, r.o.maxDelay)
		if !ok {
			status, out = api.HealthCritical, "not in the primary's replication"
		}
		if err := r.agent.Agent().UpdateTTL(checkID(st.ID), out, status); err != nil {
			errs = append(errs, fmt.Errorf("update %s: %w", st.ID, err))
			continue
		}
		if status != st.Status {
			r.o.log.Info("pgconsul: check", "replica", st.Replica, "status", status, "output", out)
		}
		sts[i].Status, sts[i].Output = status, out
	}
	r.mu.Lock()
	r.status = sts
	r.mu.Unlock()
	return errors.Join(errs...)
}

// keep refreshes every check with its last judgement when the lags could
// not be read (a saturated or stalled primary): a replica is not judged
// stale because the primary was slow to say how far behind it is, which
// would send every read to that primary and keep it saturated.
func (r *Registration) keep(cause error) error {
	var errs []error
	for _, st := range r.Statuses() {
		out := st.Output + " (kept: the lag could not be read: " + cause.Error() + ")"
		if err := r.agent.Agent().UpdateTTL(checkID(st.ID), out, st.Status); err != nil {
			errs = append(errs, fmt.Errorf("keep %s: %w", st.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Judge is a replica's check: critical when it does not answer, is not
// streaming, or is both maxBytes and maxDelay behind (by bytes alone
// when it has replayed no transaction since it started, which
// pgcluster reads as 0); passing otherwise.
func Judge(l pgcluster.Lag, maxBytes int64, maxDelay time.Duration) (status, output string) {
	unknown := l.SinceReplay == 0 && !l.CaughtUp
	since := l.SinceReplay.Round(time.Millisecond).String() + " ago"
	if unknown {
		since = "none since start"
	}
	desc := fmt.Sprintf("%s: %s, %d bytes behind, last replay %s, caught up %v", l.Replica, l.State, l.Bytes, since, l.CaughtUp)
	switch {
	case l.Err != nil:
		return api.HealthCritical, fmt.Sprintf("%s does not answer: %v", l.Replica, l.Err)
	case l.State != "streaming":
		return api.HealthCritical, desc + " (not streaming)"
	case l.CaughtUp && l.Bytes == 0:
		return api.HealthPassing, desc
	case l.Bytes >= maxBytes && (l.SinceReplay >= maxDelay || unknown):
		return api.HealthCritical, fmt.Sprintf("%s (over %d bytes and %s)", desc, maxBytes, maxDelay)
	}
	return api.HealthPassing, desc
}

// Statuses are the checks as last set.
func (r *Registration) Statuses() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Status(nil), r.status...)
}

// Close stops the updates and deregisters every replica from the agent;
// it is idempotent.
func (r *Registration) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		<-r.done
		r.closeErr = r.deregister()
	})
	return r.closeErr
}

func (r *Registration) deregister() error {
	r.mu.Lock()
	sts := append([]Status(nil), r.status...)
	r.mu.Unlock()
	var errs []error
	for _, st := range sts {
		if err := r.agent.Agent().ServiceDeregister(st.ID); err != nil {
			errs = append(errs, fmt.Errorf("deregister %s: %w", st.ID, err))
		}
	}
	return errors.Join(errs...)
}
