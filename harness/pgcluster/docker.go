package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/images"
)

// Container images: the official one, then what `chaoslab images build`
// makes; ImageEnv names one to prefer.
const (
	OfficialImage = "postgres:" + images.PostgresMajor
	DefaultImage  = images.PostgresRef
	ImageEnv      = "CHAOSLAB_POSTGRESQL_IMAGE"
	// Component labels the cluster's containers.
	Component = "postgresql"
	// containerPort is where every server listens in its container.
	containerPort = 5432
)

// ImageCandidates are the images a cluster in containers can run from, in
// order: $ImageEnv (if set), OfficialImage, DefaultImage.
func ImageCandidates() []string {
	var out []string
	if v := strings.TrimSpace(os.Getenv(ImageEnv)); v != "" {
		out = append(out, v)
	}
	return append(out, OfficialImage, DefaultImage)
}

// Containers place the cluster in containers on a network of the caller's
// (a container site's): each server is a container of Image, reached by
// the harness at its address on that network, and the primary's CPU share
// is its container's limit.
type Containers struct {
	Network *testcontainers.DockerNetwork
	RunID   string
	// Image is the servers' image (an official postgres:15 or
	// DefaultImage): run as the postgres user with trust auth.
	Image string
	// LogDir receives each server's output (default: the cluster's folder).
	LogDir string
}

// WithContainers runs the servers in containers instead of as local
// processes.
func WithContainers(c Containers) Option { return func(o *options) { o.ctr = &c } }

// serverContainer is a server's container.
type serverContainer struct {
	ctr  *docker.Container
	ip   netip.Addr
	pid  int
	logs *docker.LogFollower
	ref  string // its container name
}

// startContainers starts the primary, then every replica from a base
// backup of it, each in a container, and waits until they stream.
func (c *Cluster) startContainers(ctx context.Context) error {
	o := c.o.ctr
	if o.Network == nil || o.Image == "" {
		return errors.New("containers need a network and an image")
	}
	root, err := os.MkdirTemp("", "chaoslab-pg-")
	if err != nil {
		return err
	}
	c.root, c.tmp = root, true
	if o.LogDir == "" {
		o.LogDir = root
	}
	began := time.Now()
	p := c.newContainerServer("primary")
	c.primary = p
	args := append([]string{"postgres"}, c.containerConf()...)
	if err := c.runContainer(ctx, p, args, c.o.primaryCPU); err != nil {
		return err
	}
	if err := p.WaitReady(ctx); err != nil {
		return err
	}
	// The official image lets every host in but not for replication.
	if _, err := p.pool.Exec(ctx, `DO $$ BEGIN EXECUTE format('COPY (SELECT %L) TO PROGRAM %L', 'host replication all all trust', 'cat >> ' || current_setting('hba_file')); END $$`); err != nil {
		return fmt.Errorf("allow replication: %w", err)
	}
	if _, err := p.pool.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		return fmt.Errorf("allow replication: %w", err)
	}
	for i := range c.o.replicas {
		r := c.newContainerServer("replica" + strconv.Itoa(i+1))
		r.slot = r.name
		conf := strings.Join(append(c.containerConf(), "-c", "cluster_name="+r.name), " ")
		script := fmt.Sprintf(`pg_basebackup -h %s -p %d -U postgres -D "$PGDATA" -R -X stream -C -S %s --no-sync && `+
			`echo "primary_conninfo = 'host=%s port=%d user=postgres application_name=%s'" >> "$PGDATA/postgresql.auto.conf" && exec postgres %s`,
			p.ctr0.ip, containerPort, r.slot, p.ctr0.ip, containerPort, r.name, conf)
		c.replicas = append(c.replicas, r)
		if err := c.runContainer(ctx, r, []string{"sh", "-c", script}, 0); err != nil {
			return err
		}
		if err := r.WaitReady(ctx); err != nil {
			return err
		}
	}
	if err := c.WaitStreaming(ctx); err != nil {
		return err
	}
	c.log.Info("pgcluster: ready in containers", "primary", p.Addr(), "replicas", c.o.replicas, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// containerConf are the postgres settings of every server in a container.
func (c *Cluster) containerConf() []string {
	kv := [][2]string{{"listen_addresses", "*"}, {"unix_socket_directories", "/tmp"}, {"wal_level", "replica"},
		{"max_wal_senders", "16"}, {"max_replication_slots", "16"}, {"hot_standby", "on"}, {"hot_standby_feedback", "on"},
		{"fsync", "off"}, {"full_page_writes", "off"}, {"cluster_name", "primary"}}
	for k, v := range c.o.settings {
		kv = append(kv, [2]string{k, v})
	}
	var out []string
	for _, p := range kv {
		out = append(out, "-c", p[0]+"="+p[1])
	}
	return out
}

// newContainerServer is a server's record; its address is known once its
// container runs.
func (c *Cluster) newContainerServer(name string) *Server {
	return &Server{c: c, name: name, port: containerPort, done: make(chan struct{}), ctr0: &serverContainer{}}
}

// runContainer runs s's container with cmd (as the postgres user, trust
// auth), limited to cores CPUs (0: none), and opens s's pool at its
// address on the network.
func (c *Cluster) runContainer(ctx context.Context, s *Server, cmd []string, cores float64) error {
	o := c.o.ctr
	name := o.RunID + "-pg-" + s.name
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd(cmd...),
		testcontainers.WithEnv(map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust", "POSTGRES_INITDB_ARGS": "--encoding=UTF8 --locale=C --no-sync"}),
		testcontainers.WithConfigModifier(func(cfg *container.Config) { cfg.User = "postgres" }),
		testcontainers.WithLabels(docker.MergeLabels(docker.Labels(o.RunID), map[string]string{docker.LabelComponent: Component, docker.LabelMember: s.name})),
		testcontainers.WithName(name),
		network.WithNetwork([]string{s.name}, o.Network),
	}
	if cores > 0 {
		opts = append(opts, docker.WithCPULimit(cores))
	}
	s.ctr0.ref = name
	ctr, err := testcontainers.Run(ctx, o.Image, opts...)
	if ctr != nil {
		s.ctr0.ctr = &docker.Container{Container: ctr}
		if l, err := docker.FollowLogs(context.WithoutCancel(ctx), ctr.GetContainerID(), filepath.Join(o.LogDir, "pg-"+s.name+".log")); err == nil {
			s.ctr0.logs = l
		}
	}
	if err != nil {
		return fmt.Errorf("run %s: %w", s.name, err)
	}
	ip, err := s.ctr0.ctr.IP(ctx, o.Network.Name)
	if err != nil {
		return fmt.Errorf("run %s: %w", s.name, err)
	}
	st, err := s.ctr0.ctr.RunState(ctx)
	if err != nil {
		return fmt.Errorf("run %s: %w", s.name, err)
	}
	s.ctr0.ip, s.ctr0.pid, s.host = ip, st.Pid, ip.String()
	return s.openPool()
}

// stopContainer removes s's container and waits for its log.
func (s *Server) stopContainer(ctx context.Context) error {
	if s.ctr0.ref == "" {
		return nil
	}
	s.mu.Lock()
	s.exited = true
	s.mu.Unlock()
	return docker.RemoveMember(ctx, s.ctr0.ctr, s.ctr0.ref, s.ctr0.logs)
}
