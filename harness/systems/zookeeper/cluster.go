package zookeeper

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/placement/local"
)

// ensemble is what the two placements' ensembles give.
type ensemble interface {
	members() []zkMember
	endpoints(v lab.View) []string
	leader(ctx context.Context) (zkMember, error)
	waitHealthy(ctx context.Context) error
	// limitCPU holds every member to cores (also applied again by a
	// member's restart or replacement).
	limitCPU(cores float64) error
	close() error
}

// cluster is a running ensemble as a lab.Cluster.
type cluster struct {
	ens ensemble
	env *lab.Env
}

func (c *cluster) Members() []lab.Member {
	ms := c.ens.members()
	out := make([]lab.Member, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func (c *cluster) Endpoints(v lab.View) []string { return c.ens.endpoints(v) }

// ClientEnv: the connect string.
func (c *cluster) ClientEnv(v lab.View, _ int) map[string]string {
	return map[string]string{"CHAOSLAB_ZK_CONNECT": strings.Join(c.ens.endpoints(v), ",")}
}

func (c *cluster) Leader(ctx context.Context) (lab.Member, error) {
	l, err := c.ens.leader(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (c *cluster) WaitHealthy(ctx context.Context) error { return c.ens.waitHealthy(ctx) }

// Sample reads every member's mntr at once, and what the servers' logs
// say (SeriesNotSynced, SeriesElections).
func (c *cluster) Sample(ctx context.Context) []lab.MemberSample {
	ms := c.ens.members()
	out := make([]lab.MemberSample, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { out[i] = sample(ctx, m, c.env.Clock) })
	}
	wg.Wait()
	if l, ok := c.ens.(logSampler); ok {
		out = append(out, l.logSample(c.env.Now()))
	}
	return out
}

// logSampler is an ensemble whose servers' logs the harness reads as they
// are written (local processes' files, containers' output copied to the
// run's log folder): one more sample, of source "ensemble".
type logSampler interface {
	logSample(t float64) lab.MemberSample
}

// Version is the version the servers report (mntr zk_version, without the
// placeholder Debian's build leaves in it) and what it was read from: the
// raw answer when it was cleaned, and on the local placement the version
// of the Debian package the servers run from.
func (c *cluster) Version(ctx context.Context) string {
	raw := ""
	for _, m := range c.ens.members() {
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
	if c.env != nil {
		if _, ok := c.env.Site.(*local.Site); ok {
			if d, err := debianVersion(ctx); err == nil {
				from += "; Debian package libzookeeper-java " + d
			}
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

func (c *cluster) Close() error { return c.ens.close() }

// DataDirs: the local members' data directories (a container's data
// goes with it).
func (c *cluster) DataDirs() []string {
	if d, ok := c.ens.(interface{ dataDirs() []string }); ok {
		return d.dataDirs()
	}
	return nil
}

// cpuShare is the CPU limit members are held to (0 until Limit).
type cpuShare struct {
	mu    sync.Mutex
	cores float64
}

func (s *cpuShare) get() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cores
}

func (s *cpuShare) set(c float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cores = c
}

func javaVersion(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line), nil
}

// limitedCluster holds the servers to the topology's CPU share on Limit.
type limitedCluster struct {
	*cluster
	cores float64
}

func (c *limitedCluster) Limit(context.Context) error {
	if c.cores <= 0 {
		return nil
	}
	if err := c.ens.limitCPU(c.cores); err != nil {
		return err
	}
	c.env.Event("note", "harness", fmt.Sprintf("each server held to %s cores", strconv.FormatFloat(c.cores, 'g', -1, 64)))
	return nil
}
