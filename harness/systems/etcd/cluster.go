package etcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Ports of a member, as the etcd images use them.
const (
	clientPort = 2379
	peerPort   = 2380
)

// configFile is the member's configuration (etcd --config-file), in its
// configuration folder.
const configFile = "etcd.yml"

// Start starts the cluster on the variant's site and returns once it is
// healthy.
func (s *System) Start(ctx context.Context, env *lab.Env, topo lab.Settings) (lab.Cluster, error) {
	t := topo.(*Topology)
	s.mu.Lock()
	bin := s.binary
	s.mu.Unlock()
	var specs []lab.ServerSpec
	for i := range t.Members {
		specs = append(specs, lab.ServerSpec{Name: "etcd" + strconv.Itoa(i+1), Role: Name,
			Ports: []lab.Port{{Name: "client", Number: clientPort}, {Name: "peer", Number: peerPort}}})
	}
	token := fmt.Sprintf("chaoslab-%s", env.RunID)
	render := func(l lab.ServerLayout, all []lab.ServerLayout) (lab.ServerProgram, error) {
		return program(bin, l, memberConfig(l, all, token, "new")), nil
	}
	ss, err := servers.StartAll(ctx, env.Site, specs, render)
	if err != nil {
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	c, err := newCluster(env, ss, token)
	if err != nil {
		servers.StopAll(ss)
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	env.Event("health", "etcd", fmt.Sprintf("%d etcd members serving, one leader (%s placement)", len(ss), env.Site.Placement().Name()))
	return c, nil
}

// program is how a member runs: the server with its configuration file,
// on this machine or from its image.
func program(bin string, l lab.ServerLayout, cfg string) lab.ServerProgram {
	path := l.ConfDir + "/" + configFile
	return lab.ServerProgram{
		Command: []string{bin, "--config-file", path},
		Image:   Name, ImageEntrypoint: []string{imageBinary}, ImageArgs: []string{"--config-file", path},
		Files: map[string]string{path: cfg},
		Ready: ready, Up: ready,
	}
}

// memberConfig is a member's etcd.yml: its URLs, the initial cluster of
// every layout, the cluster state (new, or existing for a member that
// joins).
func memberConfig(l lab.ServerLayout, all []lab.ServerLayout, token, state string) string {
	var initial []string
	for _, o := range all {
		initial = append(initial, o.Name+"=http://"+o.Addr("peer"))
	}
	return initialConfig(l, strings.Join(initial, ","), token, state)
}

func initialConfig(l lab.ServerLayout, initial, token, state string) string {
	lines := []string{
		"name: " + l.Name,
		"data-dir: " + l.DataDir,
		"listen-client-urls: http://" + l.BindAddr("client"),
		"advertise-client-urls: http://" + l.Addr("client"),
		"listen-peer-urls: http://" + l.BindAddr("peer"),
		"initial-advertise-peer-urls: http://" + l.Addr("peer"),
		"initial-cluster: " + initial,
		"initial-cluster-state: " + state,
		"initial-cluster-token: " + token,
		"log-level: warn",
		"heartbeat-interval: 100",
		"election-timeout: 1000",
	}
	return strings.Join(lines, "\n") + "\n"
}

// clientURL is where a member's clients reach it from v: its address
// (the engine's name lookups are slow while dozens of containers start).
func clientURL(s lab.Server, v lab.View) string {
	if v == lab.FromSite {
		if p := s.Proc(); p != nil && p.Host() != "" {
			return "http://" + net.JoinHostPort(p.Host(), strconv.Itoa(s.Layout().Ports["client"]))
		}
	}
	return "http://" + s.Addr("client", v)
}

// ready: the member answers its status.
func ready(ctx context.Context, s lab.Server) error { return status(ctx, clientURL(s, lab.FromHost)) }

// status asks one member for its status.
func status(ctx context.Context, url string) error {
	cli, err := client(url)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Status(ctx, url)
	return err
}

func client(urls ...string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connect etcd: %w", err)
	}
	return cli, nil
}

// cluster is a running etcd cluster as a lab.Cluster.
type cluster struct {
	env     *lab.Env
	token   string
	members []*servers.Member
	cli     *clientv3.Client
	http    *http.Client
}

func newCluster(env *lab.Env, ss []lab.Server, token string) (*cluster, error) {
	c := &cluster{env: env, token: token, http: &http.Client{}}
	for _, s := range ss {
		c.members = append(c.members, &servers.Member{Server: s, Env: env, RoleOf: c.roleOf, Replacing: c.replacing})
	}
	cli, err := client(c.Endpoints(lab.FromHost)...)
	if err != nil {
		return nil, err
	}
	c.cli = cli
	return c, nil
}

// DataDirs: the members' data on this machine (a container's goes with
// it).
func (c *cluster) DataDirs() []string { return servers.DataDirs(c.members) }

func (c *cluster) Members() []lab.Member { return servers.Members(c.members) }

func (c *cluster) Endpoints(v lab.View) []string {
	var out []string
	for _, m := range c.members {
		out = append(out, clientURL(m.Server, v))
	}
	return out
}

// ClientEnv: the client URLs.
func (c *cluster) ClientEnv(v lab.View, _ int) map[string]string {
	return map[string]string{"CHAOSLAB_ETCD_ENDPOINTS": strings.Join(c.Endpoints(v), ",")}
}

// ClientAddrs are the members' client addresses from the host.
func (c *cluster) ClientAddrs() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.Addr("client", lab.FromHost))
	}
	return out
}

// ClientEnvVia: the client URLs, each through via.
func (c *cluster) ClientEnvVia(_ int, via func(string) string) map[string]string {
	var urls []string
	for _, a := range c.ClientAddrs() {
		urls = append(urls, "http://"+via(a))
	}
	return map[string]string{"CHAOSLAB_ETCD_ENDPOINTS": strings.Join(urls, ",")}
}

func (c *cluster) roleOf(ctx context.Context, s lab.Server) (string, error) {
	r, _, err := c.role(ctx, clientURL(s, lab.FromHost))
	return r, err
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
			if r, _, err := c.role(ctx, clientURL(m.Server, lab.FromHost)); err == nil && r == lab.RoleLeader {
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

// WaitHealthy waits until every member runs and knows a leader, and a
// linearizable read succeeds.
func (c *cluster) WaitHealthy(ctx context.Context) error {
	var last error
	for {
		if last = c.health(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for etcd: %w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *cluster) health(ctx context.Context) error {
	for _, m := range c.members {
		if !m.Running() {
			return fmt.Errorf("%s is not running", m.Name())
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.cli.Status(sctx, clientURL(m.Server, lab.FromHost))
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
		if st.Leader == 0 {
			return fmt.Errorf("%s: no leader", m.Name())
		}
	}
	gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.cli.Get(gctx, "/chaoslab/health"); err != nil {
		return fmt.Errorf("linearizable read: %w", err)
	}
	return nil
}

// replacing readies a member's replacement the way an operator replaces
// an etcd member: member remove (asked of the others), the old server
// stopped, member add, and the fresh one's configuration to join the
// existing cluster.
func (c *cluster) replacing(ctx context.Context, s lab.Server) error {
	var others []string
	for _, m := range c.members {
		if m.Server != s {
			others = append(others, clientURL(m.Server, lab.FromHost))
		}
	}
	if len(others) == 0 {
		return errors.New("a single-member cluster cannot replace its member")
	}
	cli, err := client(others...)
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := removeMember(ctx, cli, s.Name()); err != nil {
		return err
	}
	s.Stop(0)
	l := s.Layout()
	var added *clientv3.MemberAddResponse
	err = retry(ctx, func(ctx context.Context) error {
		var err error
		added, err = cli.MemberAdd(ctx, []string{"http://" + l.Addr("peer")})
		return err
	})
	if err != nil {
		return fmt.Errorf("member add: %w", err)
	}
	var parts []string
	for _, mem := range added.Members {
		name := mem.Name
		if mem.ID == added.Member.ID {
			name = l.Name
		}
		for _, u := range mem.PeerURLs {
			if name != "" {
				parts = append(parts, name+"="+u)
			}
		}
	}
	sort.Strings(parts)
	return s.WriteFile(l.ConfDir+"/"+configFile, initialConfig(l, strings.Join(parts, ","), c.token, "existing"))
}

// removeMember removes the member called name from the cluster (nothing
// when it is gone already).
func removeMember(ctx context.Context, cli *clientv3.Client, name string) error {
	err := retry(ctx, func(ctx context.Context) error {
		list, err := cli.MemberList(ctx)
		if err != nil {
			return err
		}
		for _, mem := range list.Members {
			if mem.Name == name {
				_, err = cli.MemberRemove(ctx, mem.ID)
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("member remove: %w", err)
	}
	return nil
}

// retry calls f with a deadline of 5 s until it succeeds or ctx ends (a
// membership change fails while a leader is being elected).
func retry(ctx context.Context, f func(context.Context) error) error {
	for {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(fctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Sample reads every member's status.
func (c *cluster) Sample(ctx context.Context) []lab.MemberSample {
	out := make([]lab.MemberSample, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() {
			s := lab.MemberSample{T: c.env.Now(), Member: m.Name()}
			if m.Running() && !m.Paused() {
				url := clientURL(m.Server, lab.FromHost)
				if r, _, err := c.role(ctx, url); err == nil {
					s.OK, s.Role = true, r
					s.Values = c.metrics(ctx, url)
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
		if ok && strings.HasPrefix(name, startedCalls+"{") {
			if x, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
				out[lab.SeriesServerRequests] += x
			}
			continue
		}
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
		if _, st, err := c.role(ctx, clientURL(m.Server, lab.FromHost)); err == nil {
			return st.Version
		}
	}
	return ""
}

// Close stops every member (their site removes what is left).
func (c *cluster) Close() error {
	_ = c.cli.Close()
	return servers.Close(c.members)
}
