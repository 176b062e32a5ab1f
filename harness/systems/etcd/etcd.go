// Package etcd is the etcd system: a cluster of the etcd server built from
// tools/etcd, as local processes on loopback (harness/etcdlocal) or as
// containers of the etcd project's image or its local equivalent
// (harness/dockeretcd), its members and their roles (raft leader or
// follower, from each member's status), its health, and a sampler of each
// member's status on the run's clock.
package etcd

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/dockeretcd"
	"github.com/chaoslab/chaoslab/harness/etcdlocal"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/placement/container"
	"github.com/chaoslab/chaoslab/harness/placement/local"
)

// Name is the system's registered name.
const Name = "etcd"

func init() { lab.RegisterSystem(&System{}) }

// Topology is an etcd cluster.
type Topology struct {
	// Members is the number of etcd members, 1 to 7.
	Members int `yaml:"members" json:"members"`
	// Image is the members' image on the docker placement (default: the
	// etcd project's image, else the local equivalent).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
}

// Check validates the topology.
func (t *Topology) Check() []lab.Problem {
	var c lab.Checks
	c.Need(t.Members >= 1 && t.Members <= 7, "members", "want 1 to 7, got %d", t.Members)
	return c
}

// Images: the members' image.
func (t *Topology) Images() []lab.ImageNeed {
	return []lab.ImageNeed{{Name: Name, Ref: t.Image, Defaults: []string{dockeretcd.OfficialImage, dockeretcd.DefaultImage}}}
}

// Facts describe the cluster in a report.
func (t *Topology) Facts() []lab.Fact {
	return []lab.Fact{{Name: "etcd", Value: fmt.Sprintf("%d members, etcd %s", t.Members, images.EtcdVersion)}}
}

// System is etcd.
type System struct {
	mu     sync.Mutex
	binary string // the local server binary, once prepared
}

func (*System) Name() string               { return Name }
func (*System) NewTopology() lab.Settings  { return &Topology{Members: 3} }
func (*System) Roles() []string            { return []string{lab.RoleLeader, lab.RoleFollower} }
func (*System) SampleEvery() time.Duration { return time.Second }
func (*System) Metrics() []lab.MetricDef   { return nil }
func (*System) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: "server.proposals_pending", Title: "Raft proposals pending per member (/metrics)", Unit: "proposals"},
		{Name: "server.db_size_mb", Title: "etcd database size per member (MiB, /metrics)", Unit: "MiB"},
	}
}

// sampled are the gauges of a member's /metrics the sampler keeps, by
// the series they become (and a scale).
var sampled = map[string]struct {
	series string
	scale  float64
}{
	"etcd_server_proposals_pending":    {"server.proposals_pending", 1},
	"etcd_mvcc_db_total_size_in_bytes": {"server.db_size_mb", 1.0 / (1 << 20)},
}

// Prepare builds (or finds in the cache) the etcd server for local processes.
func (s *System) Prepare(ctx context.Context, p lab.Placement, _ *slog.Logger) error {
	lp, ok := p.(*local.Placement)
	if !ok {
		return nil
	}
	bin, err := lp.Binary(ctx, Name, images.EtcdVersion, images.EtcdBinary)
	s.mu.Lock()
	s.binary = bin
	s.mu.Unlock()
	return err
}

func (*System) Probe(placement string) (lab.Member, error) {
	switch placement {
	case local.Name:
		return &localMember{Member: &etcdlocal.Member{}}, nil
	case container.Name:
		return &dockerMember{Member: &dockeretcd.Member{}}, nil
	}
	return nil, fmt.Errorf("etcd runs on local or docker, not %s", placement)
}

// Start starts the cluster on the variant's site.
func (s *System) Start(ctx context.Context, env *lab.Env, topo lab.Settings) (lab.Cluster, error) {
	t := topo.(*Topology)
	switch site := env.Site.(type) {
	case *local.Site:
		s.mu.Lock()
		bin := s.binary
		s.mu.Unlock()
		return startLocal(ctx, env, bin, t)
	case *container.Site:
		return startDocker(ctx, env, site, t)
	}
	return nil, fmt.Errorf("start etcd: no way to run on %s", env.Site.Placement().Name())
}

// member is what both placements' members give.
type member interface {
	lab.Member
	endpoint() string
}

// cluster is a running etcd cluster as a lab.Cluster.
type cluster struct {
	env     *lab.Env
	members []member
	host    []string // client URLs from the harness
	site    []string // client URLs from the site's programs
	cli     *clientv3.Client
	http    *http.Client
	wait    func(ctx context.Context) error
	close   func() error
	// data are the members' data directories on this machine.
	data []string
}

// DataDirs: the local members' data (a container's goes with it).
func (c *cluster) DataDirs() []string { return c.data }

func newCluster(env *lab.Env, ms []member, host, site []string, wait func(context.Context) error, closeFn func() error) (*cluster, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: host, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect etcd: %w", err)
	}
	c := &cluster{env: env, members: ms, host: host, site: site, cli: cli, wait: wait, close: closeFn, http: &http.Client{}}
	for _, m := range ms {
		if lm, ok := m.(*localMember); ok {
			lm.c = c
		}
		if dm, ok := m.(*dockerMember); ok {
			dm.c = c
		}
	}
	env.Event("health", "etcd", fmt.Sprintf("%d etcd members serving, one leader (%s placement)", len(ms), env.Site.Placement().Name()))
	return c, nil
}

func (c *cluster) Members() []lab.Member {
	out := make([]lab.Member, len(c.members))
	for i, m := range c.members {
		out[i] = m
	}
	return out
}

func (c *cluster) Endpoints(v lab.View) []string {
	if v == lab.FromHost {
		return c.host
	}
	return c.site
}

// ClientEnv: the client URLs.
func (c *cluster) ClientEnv(v lab.View, _ int) map[string]string {
	return map[string]string{"CHAOSLAB_ETCD_ENDPOINTS": strings.Join(c.Endpoints(v), ",")}
}

// role asks a member's status whether it leads.
func (c *cluster) role(ctx context.Context, endpoint string) (string, *clientv3.StatusResponse, error) {
	sctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	st, err := c.cli.Status(sctx, endpoint)
	if err != nil {
		return "", nil, err
	}
	if st.Leader == st.Header.MemberId {
		return lab.RoleLeader, st, nil
	}
	return lab.RoleFollower, st, nil
}

func (c *cluster) Leader(ctx context.Context) (lab.Member, error) {
	for {
		for _, m := range c.members {
			if !m.Running() || m.Paused() {
				continue
			}
			if r, _, err := c.role(ctx, m.endpoint()); err == nil && r == lab.RoleLeader {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("find etcd leader: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) WaitHealthy(ctx context.Context) error { return c.wait(ctx) }

// Sample reads every member's status.
func (c *cluster) Sample(ctx context.Context) []lab.MemberSample {
	out := make([]lab.MemberSample, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			s := lab.MemberSample{T: c.env.Now(), Member: m.Name()}
			if m.Running() && !m.Paused() {
				if r, _, err := c.role(ctx, m.endpoint()); err == nil {
					s.OK, s.Role = true, r
					s.Values = c.metrics(ctx, m.endpoint())
				}
			}
			out[i] = s
		})
	}
	wg.Wait()
	return out
}

// metrics reads the member's own /metrics (Prometheus text) for the
// unlabelled gauges the sampler keeps.
func (c *cluster) metrics(ctx context.Context, endpoint string) map[string]float64 {
	out := map[string]float64{}
	mctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(mctx, http.MethodGet, endpoint+"/metrics", nil)
	if err != nil {
		return out
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		g, want := sampled[name]
		if !ok || !want {
			continue
		}
		if x, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[g.series] = x * g.scale
		}
	}
	return out
}

func (*cluster) Limit(context.Context) error { return nil }

func (c *cluster) Version(ctx context.Context) string {
	for _, m := range c.members {
		if _, st, err := c.role(ctx, m.endpoint()); err == nil {
			return st.Version
		}
	}
	return ""
}

func (c *cluster) Close() error {
	_ = c.cli.Close()
	return c.close()
}
