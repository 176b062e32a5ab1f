package pgcluster

import (
	"fmt"
	"log/slog"
)

// Option sets up a cluster.
type Option func(*options)

type options struct {
	replicas   int
	log        *slog.Logger
	primaryCPU float64
	settings   map[string]string
}

func defaults() options {
	return options{replicas: 2, log: slog.Default(), settings: map[string]string{}}
}

// WithReplicas sets the number of streaming replicas (default 2; 0..MaxReplicas).
func WithReplicas(n int) Option { return func(o *options) { o.replicas = n } }

// WithLogger sends the cluster's events to l.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithPrimaryCPU holds the primary (its postmaster and every backend) to
// cores CPUs (its cgroup's quota, or its container's limit).
func WithPrimaryCPU(cores float64) Option { return func(o *options) { o.primaryCPU = cores } }

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
