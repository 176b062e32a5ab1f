package consul_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/kinds/dblb/consulload"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/systems/consul"
	"github.com/chaoslab/chaoslab/harness/tier"
)

// An agent under the scaled IL-0206 limit (100 MiB) is OOM-killed by the
// kernel under consulload's vulnerable lookups, restarted again and again
// after a doubling back-off, and serves again once the load stops; each
// death and restart is on the timeline and nothing is left behind.
func TestIntegration_AgentRestartedAfterOOMKill(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0206 (the agents restarted with their back-off after each OOM kill)")
	if testing.Short() {
		t.Skip("integration test: starts real Consul processes under a memory limit (skipped with -short)")
	}
	if mode, why := limits.Detect(); mode == limits.ModeNone {
		t.Skipf("no cgroups here: %s", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	log := labtest.Logger(t)
	sys, err := lab.GetSystem(consul.Name)
	require.NoError(t, err)
	plc := labtest.LocalPlacement(t, ctx, log)
	topo := sys.NewTopology().(*consul.Topology)
	topo.Servers, topo.Agents, topo.AgentMemoryMB = 1, 1, 100
	topo.AgentRestart = instances.Backoff{Initial: lab.Duration(time.Second), Max: lab.Duration(8 * time.Second)}
	require.Empty(t, topo.Check())
	require.NoError(t, plc.Prepare(ctx, nil))
	if err := sys.Prepare(ctx, plc, log); err != nil {
		t.Skipf("no consul binary here: %v", err)
	}
	dir := t.TempDir()
	runID := "consul-restart-" + time.Now().Format("150405")
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	events := make(chan lab.Event, 1000)
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log,
		OnEvent: func(e lab.Event) { events <- e }}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
			_ = site.Close()
		}
	}()

	srvHTTP, _ := consul.NodeAddrs(c, "server1")
	_, agentDNS := consul.NodeAddrs(c, "agent1")
	cfg := api.DefaultConfig()
	cfg.Address = srvHTTP
	srv, err := api.NewClient(cfg)
	require.NoError(t, err)
	svc := consulload.NewService()
	require.NoError(t, consulload.Register(ctx, srv, svc))

	lctx, lcancel := context.WithTimeout(ctx, 25*time.Second)
	go func() { _, _ = consulload.Flap(lctx, srv, svc, time.Second) }()
	cnt, err := consulload.Run(lctx, consulload.Load{DNSAddr: agentDNS, Service: svc.Name, Lookers: 25, TCP: true})
	lcancel()
	require.NoError(t, err)
	t.Logf("load for 25 s: %v", cnt)

	// After the load, the agent comes back (within the cap plus a join).
	r := consulload.Resolver(agentDNS, true)
	require.Eventually(t, func() bool {
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		defer qcancel()
		_, srvs, err := r.LookupSRV(qctx, "", "", "consul.service.consul")
		return err == nil && len(srvs) > 0
	}, 40*time.Second, 500*time.Millisecond, "the agent answers DNS again after the load")

	lives := consul.AgentLives(c)
	require.Len(t, lives, 1)
	l := lives[0]
	t.Logf("agent1: %d OOM kills, %d exits, %d restarts, back-offs %v, down %s", l.OOMKills, l.Exits, l.Restarts, l.Delays, l.Down.Round(time.Millisecond))
	require.GreaterOrEqual(t, l.OOMKills, 1, "OOM-killed by the kernel")
	require.GreaterOrEqual(t, l.Restarts, 2)
	require.Greater(t, l.Delays[1], l.Delays[0], "the back-off grows")
	for _, d := range l.Delays {
		require.LessOrEqual(t, d, 8*time.Second, "capped")
	}
	require.Greater(t, l.Down, time.Second)

	// The figures as the sampler records them, and the timeline.
	var sum lab.MemberSample
	for _, s := range c.Sample(ctx) {
		if s.Member == "agents" {
			sum = s
		}
	}
	require.InDelta(t, float64(l.OOMKills), sum.Values[consul.SeriesOOMKills], 0.5)
	require.GreaterOrEqual(t, sum.Values[consul.SeriesRestarts], float64(l.Restarts))
	kinds := map[string]int{}
	for len(events) > 0 {
		kinds[(<-events).Kind]++
	}
	t.Logf("timeline: %v", kinds)
	require.Equal(t, l.OOMKills, kinds["oom-kill"])
	require.GreaterOrEqual(t, kinds["agent-restart"], 2)

	closed = true
	require.NoError(t, c.Close())
	require.NoError(t, site.Close())
	labtest.NoProcessNaming(t, dir)
	labtest.NoCgroups(t, runID)
}

// On the docker placement, an agent container killed again and again is
// started again after a doubling back-off (the engine's state says
// whether the kernel OOM-killed it: here it did not), and nothing is left.
func TestIntegration_AgentRestartedOnDocker(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0206 (agents restarted after OOM kills, on local processes)")
	if testing.Short() {
		t.Skip("integration test: starts Consul containers (skipped with -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	log := labtest.Logger(t)
	sys, err := lab.GetSystem(consul.Name)
	require.NoError(t, err)
	newPlacement, err := lab.GetPlacement("docker")
	require.NoError(t, err)
	plc, err := newPlacement(lab.PlacementOptions{Log: log})
	require.NoError(t, err)
	if err := plc.Available(ctx); err != nil {
		t.Skipf("docker placement: %v", err)
	}
	topo := sys.NewTopology().(*consul.Topology)
	topo.Servers, topo.Agents = 1, 1
	topo.AgentRestart = instances.Backoff{Initial: lab.Duration(time.Second), Max: lab.Duration(4 * time.Second)}
	require.Empty(t, topo.Check())
	if err := plc.Prepare(ctx, topo.Images()); err != nil {
		t.Skipf("docker placement cannot run consul here: %v", err)
	}
	require.NoError(t, sys.Prepare(ctx, plc, log))
	dir := t.TempDir()
	runID := "consul-restart-docker-" + time.Now().Format("150405")
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	c, err := sys.Start(ctx, env, topo)
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
			_ = site.Close()
		}
	}()
	var agent lab.Member
	for _, m := range c.Members() {
		if m.Name() == "agent1" {
			agent = m
		}
	}
	require.NotNil(t, agent)
	for i := range 3 {
		require.NoError(t, agent.Kill(), "kill %d", i+1)
		require.Eventually(t, func() bool {
			l := consul.AgentLives(c)[0]
			return l.Restarts == i+1 && l.Exits == i+1
		}, 60*time.Second, 100*time.Millisecond, "restart %d", i+1)
		require.NoError(t, c.WaitHealthy(ctx))
	}
	l := consul.AgentLives(c)[0]
	t.Logf("agent1 on docker: %d exits, %d OOM kills, %d restarts, back-offs %v, down %s", l.Exits, l.OOMKills, l.Restarts, l.Delays, l.Down.Round(time.Millisecond))
	require.Equal(t, 0, l.OOMKills, "a kill is not an OOM kill")
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, l.Delays)

	closed = true
	require.NoError(t, c.Close())
	require.NoError(t, site.Close())
	left, err := docker.Leftovers(context.Background(), runID)
	require.NoError(t, err)
	require.Empty(t, left, "containers or networks left")
}
