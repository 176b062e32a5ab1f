package consul_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
)

// A Consul datacenter of servers and client agents starts through the
// System interface on both placements, with the roles, endpoints, samples
// and faults the pipeline uses, and leaves nothing behind.
func TestIntegration_ConsulOnBothPlacements(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts real Consul servers and agents (skipped with -short)")
	}
	for _, placement := range []string{"local", "docker"} {
		t.Run(placement, func(t *testing.T) { runConsul(t, placement) })
	}
}

func runConsul(t *testing.T, placement string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	log := labtest.Logger(t)
	sys, err := lab.GetSystem("consul")
	require.NoError(t, err)
	newPlacement, err := lab.GetPlacement(placement)
	require.NoError(t, err)
	plc, err := newPlacement(lab.PlacementOptions{Log: log})
	require.NoError(t, err)
	if err := plc.Available(ctx); err != nil {
		t.Skipf("%s placement: %v", placement, err)
	}
	topo := sys.NewTopology().(interface {
		lab.Settings
		lab.ImageNeeder
	})
	if err := plc.Prepare(ctx, topo.Images()); err != nil {
		t.Skipf("%s placement cannot run consul here: %v", placement, err)
	}
	require.NoError(t, sys.Prepare(ctx, plc, log))
	dir := t.TempDir()
	runID := "consul-test-" + placement + "-" + time.Now().Format("150405")
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	began := time.Now()
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	t.Logf("%s: 1 server + 2 agents healthy in %s", placement, time.Since(began).Round(time.Millisecond))

	roles := map[string]int{}
	for _, m := range c.Members() {
		r, err := m.Role(ctx)
		require.NoError(t, err, m.Name())
		roles[r]++
	}
	require.Equal(t, map[string]int{lab.RoleLeader: 1, lab.RoleAgent: 2}, roles)
	l, err := c.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "server1", l.Name())
	require.Len(t, c.Endpoints(lab.FromHost), 2, "programs talk to their agents")
	// 40 HTTP API calls at each agent: its server.requests counts them
	// (with its own sampler's /v1/agent/metrics calls) once the interval
	// they fell in has finished.
	for _, e := range c.Endpoints(lab.FromHost) {
		for range 40 {
			resp, err := http.Get("http://" + e + "/v1/status/leader")
			require.NoError(t, err, e)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
	// A node just started may take a moment to serve its metrics, and
	// its runtime gauges come with its first telemetry interval (a CI
	// runner's agent answered without them 4.5 s after it started).
	var round []lab.MemberSample
	require.Eventually(t, func() bool {
		round = c.Sample(ctx)
		for _, s := range round {
			if _, ok := s.Values["server.alloc_mb"]; !s.OK || !ok {
				return false
			}
		}
		return len(round) == 3
	}, 30*time.Second, 500*time.Millisecond, "every node answers its sampler with its heap")
	for _, s := range round {
		require.Greater(t, s.Values["server.alloc_mb"], 1.0, s.Member)
	}
	require.Eventually(t, func() bool {
		for _, s := range c.Sample(ctx) {
			if strings.HasPrefix(s.Member, "agent") && s.Values[lab.SeriesServerRequests] < 40 {
				return false
			}
		}
		return true
	}, 30*time.Second, time.Second, "each agent counts the 40 calls it answered in server.requests")
	for _, s := range c.Sample(ctx) {
		t.Logf("%s: server.requests %.0f", s.Member, s.Values[lab.SeriesServerRequests])
	}
	require.Contains(t, c.Version(ctx), "1.14.11")

	// A fault through the selector: pause every agent, then resume.
	sel, err := lab.ParseSelector("agents", sys.Roles(), nil)
	require.NoError(t, err)
	agents, err := sel.Resolve(ctx, c, nil, nil, env.Rand(1))
	require.NoError(t, err)
	require.Len(t, agents, 2)
	require.NoError(t, agents[0].Pause())
	for _, s := range c.Sample(ctx) {
		require.Equal(t, s.Member != agents[0].Name(), s.OK, "%s: only the paused agent does not answer", s.Member)
	}
	require.NoError(t, agents[0].Resume())
	require.NoError(t, c.WaitHealthy(ctx))

	require.NoError(t, c.Close())
	require.NoError(t, site.Close())
	if placement == "docker" {
		left, err := docker.Leftovers(context.Background(), runID)
		require.NoError(t, err)
		require.Empty(t, left, "containers or networks left")
	}
	labtest.NoProcessNaming(t, dir)
	labtest.NoCgroups(t, runID)
}
