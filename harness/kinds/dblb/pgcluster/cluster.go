// Package pgcluster runs a real PostgreSQL cluster on the variant's site:
// a primary and N streaming replicas of PostgreSQL 15 (Debian's
// postgresql-15 on this machine, the official postgres image or its local
// equivalent in containers), each a server the placement starts
// (servers.StartAll), with its data initialised at its first start
// (initdb on the primary; pg_basebackup -R -X stream -C -S on each replica:
// one replication slot per replica), run as the postgres user (initdb
// refuses root), the primary optionally held to a CPU share. It reads
// health (a pgx ping), replication lag per replica and each server's load
// (connections, transaction and tuple counters, CPU). Close stops every
// server; the site removes what is left.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// DefaultBinDir is where Debian's postgresql-15 (and both images) keep
// initdb, postgres and pg_basebackup.
const DefaultBinDir = "/usr/lib/postgresql/" + images.PostgresMajor + "/bin"

// MaxReplicas is the most streaming replicas a cluster has.
const MaxReplicas = 8

// Images: the official one, then the one `chaoslab images build` makes;
// ImageName is the run's name for it (--image postgresql=REF,
// CHAOSLAB_POSTGRESQL_IMAGE).
const (
	ImageName     = "postgresql"
	OfficialImage = "postgres:" + images.PostgresMajor
	DefaultImage  = images.PostgresRef
)

// ImageCandidates are the images a cluster in containers runs from, in
// order: the official one, then the local equivalent.
func ImageCandidates() []string { return []string{OfficialImage, DefaultImage} }

// Cluster is a running primary and its replicas.
type Cluster struct {
	o        options
	log      *slog.Logger
	primary  *Server
	replicas []*Server
}

// Start starts the primary on site, then each replica from a base backup
// of it, and returns once every server answers and every replica streams.
// On error everything it started is stopped.
func Start(ctx context.Context, site lab.Site, opts ...Option) (c *Cluster, err error) {
	o := defaults()
	for _, f := range opts {
		f(&o)
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if lab.RunsHostCommands(site.Placement()) {
		if _, err := os.Stat(DefaultBinDir + "/postgres"); err != nil {
			return nil, fmt.Errorf("start postgres: %w (install postgresql-15: scripts/setup.sh)", err)
		}
	}
	c = &Cluster{o: o, log: o.log}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	began := time.Now()
	ps, err := servers.StartAll(ctx, site, []lab.ServerSpec{spec("primary")}, c.primaryProgram)
	if err != nil {
		return c, fmt.Errorf("start postgres: %w", err)
	}
	if c.primary, err = newServer(ps[0], ""); err != nil {
		return c, err
	}
	var specs []lab.ServerSpec
	for i := range o.replicas {
		specs = append(specs, spec("replica"+strconv.Itoa(i+1)))
	}
	if len(specs) > 0 {
		rs, err := servers.StartAll(ctx, site, specs, c.replicaProgram)
		if err != nil {
			return c, fmt.Errorf("start postgres: %w", err)
		}
		for _, r := range rs {
			s, err := newServer(r, r.Name())
			if err != nil {
				return c, err
			}
			c.replicas = append(c.replicas, s)
		}
	}
	if err := c.WaitStreaming(ctx); err != nil {
		return c, fmt.Errorf("start postgres: %w", err)
	}
	c.log.Info("pgcluster: ready", "primary", c.primary.Addr(), "replicas", o.replicas, "placement", site.Placement().Name(), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// spec is a server's: its port, and the postgres user it switches to.
func spec(name string) lab.ServerSpec {
	return lab.ServerSpec{Name: name, Role: "postgresql", User: "postgres", Ports: []lab.Port{{Name: "pg", Number: 5432}}}
}

// Primary is the primary.
func (c *Cluster) Primary() *Server { return c.primary }

// Replicas are the replicas, in order.
func (c *Cluster) Replicas() []*Server { return c.replicas }

// Servers are the primary, then the replicas.
func (c *Cluster) Servers() []*Server {
	if c.primary == nil {
		return c.replicas
	}
	return append([]*Server{c.primary}, c.replicas...)
}

// Close stops every server and closes the harness's pools.
func (c *Cluster) Close() error {
	ss := c.Servers()
	for _, s := range ss {
		s.pool.Close()
	}
	return servers.Close(ss)
}

// Server is one postmaster of the cluster: the primary or a replica.
type Server struct {
	lab.Server
	slot string // a replica's replication slot on the primary
	pool *pgxpool.Pool
}

// newServer is s as a server of the cluster, with the harness's pool
// (which connects lazily).
func newServer(s lab.Server, slot string) (*Server, error) {
	sv := &Server{Server: s, slot: slot}
	cfg, err := pgxpool.ParseConfig(sv.DSN())
	if err == nil {
		cfg.MaxConns = 2
		sv.pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("open pool of %s: %w", s.Name(), err)
	}
	return sv, nil
}

// Addr is the server's host:port as the harness reaches it.
func (s *Server) Addr() string { return s.Server.Addr("pg", lab.FromHost) }

// Host and Port are where programs on the site reach it (a replica's
// address registered in Consul).
func (s *Server) Host() string {
	if p := s.Proc(); p != nil && p.Host() != "" {
		return p.Host()
	}
	return s.Layout().Host
}

func (s *Server) Port() int { return s.Layout().Ports["pg"] }

// DSN is the harness's connection string to the server.
func (s *Server) DSN() string {
	host, port, _ := strings.Cut(s.Addr(), ":")
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable connect_timeout=2", host, port)
}

// Pool is the harness's pool on the server.
func (s *Server) Pool() *pgxpool.Pool { return s.pool }

// Pid is the postmaster's process id on this machine (0 when unknown).
func (s *Server) Pid() int {
	if p := s.Proc(); p != nil {
		return p.Pid()
	}
	return 0
}
