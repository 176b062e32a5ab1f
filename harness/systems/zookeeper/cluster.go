package zookeeper

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper/zkcheck"
)

// Start starts the ensemble on the variant's site and returns once every
// member serves and one stable leader leads the others.
func (System) Start(ctx context.Context, env *lab.Env, topo lab.Settings) (lab.Cluster, error) {
	t := topo.(*Topology)
	var specs []lab.ServerSpec
	for id := 1; id <= t.Servers+t.Observers; id++ {
		specs = append(specs, lab.ServerSpec{Name: memberName(id), Role: Name, Ports: ports})
	}
	ss, err := servers.StartAll(ctx, env.Site, specs, t.render)
	if err != nil {
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	c := &cluster{env: env, cores: t.CPUQuota}
	var logs []string
	for i, s := range ss {
		c.members = append(c.members, newMember(c, s, i+1))
		logs = append(logs, s.Layout().Log)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start ensemble: %w", err)
	}
	c.logs = newLogCounter(logs)
	env.Log.Info("zookeeper: healthy", "servers", t.Servers, "observers", t.Observers, "placement", env.Site.Placement().Name())
	return c, nil
}

// cluster is a running ensemble as a lab.Cluster.
type cluster struct {
	env     *lab.Env
	members []*member
	cores   float64 // each server's CPU share once limited
	logs    *logCounter
}

// check is the ensemble as zkcheck's health rules see it.
func (c *cluster) check() zkcheck.Ensemble[*member] {
	return zkcheck.Ensemble[*member]{
		Members:  func() []*member { return c.members },
		Name:     func(m *member) string { return m.Name() },
		ID:       func(m *member) int { return m.id },
		RunState: func(_ context.Context, m *member) (bool, bool) { return m.Running(), m.Paused() },
		Mntr:     func(ctx context.Context, m *member) (map[string]string, error) { return m.Mntr(ctx) },
	}
}

func (c *cluster) Members() []lab.Member { return servers.Members(c.members) }

// Endpoints: the servers' client ports, from v.
func (c *cluster) Endpoints(v lab.View) []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.Addr("client", v))
	}
	return out
}

// ClientEnv: the connect string.
func (c *cluster) ClientEnv(v lab.View, _ int) map[string]string {
	return map[string]string{"CHAOSLAB_ZK_CONNECT": strings.Join(c.Endpoints(v), ",")}
}

func (c *cluster) Leader(ctx context.Context) (lab.Member, error) {
	l, err := c.check().Leader(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// WaitHealthy waits until every running member answers mntr, none is
// paused, exactly one leads and the others follow (and the leader counts
// them synced), the same on zkcheck.StablePolls polls in a row.
func (c *cluster) WaitHealthy(ctx context.Context) error {
	_, err := c.check().WaitHealthy(ctx)
	return err
}

// Sample reads every member's mntr at once, and what the servers' logs
// say (SeriesNotSynced, SeriesElections).
func (c *cluster) Sample(ctx context.Context) []lab.MemberSample {
	out := make([]lab.MemberSample, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { out[i] = sample(ctx, m, c.env.Clock) })
	}
	wg.Wait()
	return append(out, c.logs.sample(c.env.Now()))
}

// Limit holds each server to the topology's CPU share from now on
// (restarts and replacements too).
func (c *cluster) Limit(context.Context) error {
	if c.cores <= 0 {
		return nil
	}
	for _, m := range c.members {
		if err := m.SetCPU(c.cores); err != nil {
			return fmt.Errorf("limit server cpu: %s: %w", m.Name(), err)
		}
	}
	c.env.Event("note", "harness", fmt.Sprintf("each server held to %s cores", strconv.FormatFloat(c.cores, 'g', -1, 64)))
	return nil
}

// Version is the version the servers report (mntr zk_version, without
// the placeholder Debian's build leaves in it) and what it was read from;
// where the servers run Debian's package on this machine, its version.
func (c *cluster) Version(ctx context.Context) string {
	raw := ""
	for _, m := range c.members {
		if v, err := m.Version(ctx); err == nil {
			raw = v
			break
		}
	}
	if raw == "" {
		return ""
	}
	v := cleanVersion(raw)
	from := "zk_version from mntr"
	if v != raw {
		from += fmt.Sprintf(" %q, cleaned", raw)
	}
	if c.env != nil && lab.RunsHostCommands(c.env.Site.Placement()) {
		if d, err := debianVersion(ctx); err == nil {
			from += "; Debian package libzookeeper-java " + d
		}
	}
	return v + " (" + from + ")"
}

// debianVersion is the installed version of Debian's ZooKeeper package.
func debianVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Version}", "libzookeeper-java").Output()
	if err != nil {
		return "", fmt.Errorf("read package version: %w", err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("read package version: libzookeeper-java is not installed")
	}
	return v, nil
}

// Close stops every server (the site removes what is left).
func (c *cluster) Close() error { return servers.Close(c.members) }

// DataDirs: the servers' data on this machine (a container's goes with
// it).
func (c *cluster) DataDirs() []string { return servers.DataDirs(c.members) }

func javaVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}
