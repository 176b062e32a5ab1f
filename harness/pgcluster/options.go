package pgcluster

import (
	"fmt"
	"log/slog"

	"github.com/chaoslab/chaoslab/harness/limits"
)

// DefaultBinDir holds Debian's postgresql-15 programs.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// MaxReplicas bounds WithReplicas.
const MaxReplicas = 8

// Option sets up a cluster.
type Option func(*options)

type options struct {
	replicas   int
	binDir     string
	dir        string
	user       string
	log        *slog.Logger
	limits     *limits.Manager
	primaryCPU float64
	settings   map[string]string
	ctr        *Containers // nil: local processes
}

func defaults() options {
	return options{replicas: 2, binDir: DefaultBinDir, user: "postgres", log: slog.Default(), settings: map[string]string{}}
}

// WithReplicas sets the number of streaming replicas (default 2; 0..MaxReplicas).
func WithReplicas(n int) Option { return func(o *options) { o.replicas = n } }

// WithBinDir names the folder of initdb, postgres and pg_basebackup.
func WithBinDir(dir string) Option { return func(o *options) { o.binDir = dir } }

// WithDir puts the servers' folders under dir, which must exist (default:
// a new temporary folder; either way the servers' folders are removed by Close).
func WithDir(dir string) Option { return func(o *options) { o.dir = dir } }

// WithUser names the system user the servers run as (default postgres:
// initdb refuses root).
func WithUser(name string) Option { return func(o *options) { o.user = name } }

// WithLogger sends the cluster's events to l.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithPrimaryCPU holds the primary (its postmaster and every backend) to
// cores CPUs through a cgroup of m (harness/limits; a local site's
// Limits()). With a nil m the cluster makes a cgroup manager of its own,
// removed by Close.
func WithPrimaryCPU(m *limits.Manager, cores float64) Option {
	return func(o *options) { o.limits, o.primaryCPU = m, cores }
}

// WithSetting sets a postgresql.conf parameter on every server
// (max_connections, shared_buffers, ...).
func WithSetting(name, value string) Option {
	return func(o *options) { o.settings[name] = value }
}

func (o options) check() error {
	switch {
	case o.replicas < 0 || o.replicas > MaxReplicas:
		return fmt.Errorf("%d replicas: want 0 to %d", o.replicas, MaxReplicas)
	case o.primaryCPU < 0:
		return fmt.Errorf("primary cpu %v: want > 0", o.primaryCPU)
	}
	for _, k := range []string{"port", "listen_addresses", "unix_socket_directories"} {
		if _, ok := o.settings[k]; ok {
			return fmt.Errorf("setting %s is the cluster's own", k)
		}
	}
	return nil
}
