package pgconsul

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/dblb/consulload"
	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
	"github.com/chaoslab/chaoslab/harness/systems/consul"
	"github.com/chaoslab/chaoslab/harness/systemtest"
)

// lookupPorts asks the agent's DNS, over TCP, for the SRV records of
// name and returns their ports, sorted (nil on error).
func lookupPorts(ctx context.Context, dnsAddr, name string) []int {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, srvs, err := consulload.Resolver(dnsAddr, true).LookupSRV(qctx, "", "", name)
	if err != nil {
		return nil
	}
	var out []int
	for _, s := range srvs {
		out = append(out, int(s.Port))
	}
	slices.Sort(out)
	return out
}

// TestIntegration_ReplicasByLagAwareDNS: a primary and 2 replicas
// registered at a Consul agent; both answer DNS SRV at the agent; one
// whose replay is paused while the primary takes writes turns critical
// and drops out of the answer, and comes back once replay resumes;
// nothing is left behind.
func TestIntegration_ReplicasByLagAwareDNS(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (runs postgres and consul): not with -short")
	}
	if _, err := os.Stat(pgcluster.DefaultBinDir + "/postgres"); err != nil {
		t.Skipf("no postgresql-15 (scripts/setup.sh installs it): %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("runs postgres as the postgres user: needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cc, env := systemtest.StartSystem(t, ctx, "consul", "local", func(s lab.Settings) {
		topo := s.(*consul.Topology)
		topo.Servers, topo.Agents = 1, 1
	})
	pg, err := pgcluster.Start(ctx, env.Site, pgcluster.WithReplicas(2))
	require.NoError(t, err)
	defer pg.Close()
	agentHTTP, agentDNS := cc.Endpoints(lab.FromHost)[0], ""
	dns, err := consul.AgentDNSAddrs(cc)
	require.NoError(t, err)
	agentDNS = dns[0]
	cfg := api.DefaultConfig()
	cfg.Address = agentHTTP
	cli, err := api.NewClient(cfg)
	require.NoError(t, err)

	reg, err := Register(ctx, cli, pg, WithMaxLag(1<<20, 2*time.Second), WithEvery(250*time.Millisecond))
	require.NoError(t, err)
	defer reg.Close()
	name := DefaultTag + "." + DefaultService + ".service.consul"
	r1, r2 := pg.Replicas()[0], pg.Replicas()[1]
	both := []int{r1.Port(), r2.Port()}
	slices.Sort(both)
	require.Eventually(t, func() bool { return slices.Equal(lookupPorts(ctx, agentDNS, name), both) },
		15*time.Second, 200*time.Millisecond, "both replicas answer %s", name)
	t.Logf("before: %s SRV -> ports %v (%s %d, %s %d)", name, lookupPorts(ctx, agentDNS, name), r1.Name(), r1.Port(), r2.Name(), r2.Port())

	// Replay paused on replica1 while the primary takes writes.
	p := pg.Primary().Pool()
	_, err = p.Exec(ctx, `CREATE TABLE t (id bigint, v text)`)
	require.NoError(t, err)
	// Once replica1 has replayed a transaction, its delay is known too.
	require.Eventually(t, func() bool {
		var ok bool
		return r1.Pool().QueryRow(ctx, `SELECT to_regclass('t') IS NOT NULL`).Scan(&ok) == nil && ok
	}, 10*time.Second, 50*time.Millisecond)
	_, err = r1.Pool().Exec(ctx, `SELECT pg_wal_replay_pause()`)
	require.NoError(t, err)
	paused := time.Now()
	writes, stop := make(chan error, 1), make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writes <- nil
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := p.Exec(ctx, `INSERT INTO t SELECT g, md5(g::text) FROM generate_series($1::bigint, $1::bigint + 4999) g`, i*5000); err != nil {
				writes <- err
				return
			}
		}
	}()
	only2 := []int{r2.Port()}
	require.Eventually(t, func() bool {
		return slices.Equal(lookupPorts(ctx, agentDNS, name), only2)
	},
		30*time.Second, 200*time.Millisecond, "the lagging replica drops out of %s", name)
	dropped := time.Since(paused)
	sts := reg.Statuses()
	t.Logf("replay of %s paused: after %s, %s SRV -> ports %v; checks: %s | %s", r1.Name(), dropped.Round(time.Millisecond), name, only2, sts[0].Output, sts[1].Output)
	require.Equal(t, "critical", sts[0].Status)
	require.Equal(t, "passing", sts[1].Status)
	close(stop)
	require.NoError(t, <-writes)

	_, err = r1.Pool().Exec(ctx, `SELECT pg_wal_replay_resume()`)
	require.NoError(t, err)
	resumed := time.Now()
	require.Eventually(t, func() bool { return slices.Equal(lookupPorts(ctx, agentDNS, name), both) },
		30*time.Second, 200*time.Millisecond, "the replica is back in %s once it caught up", name)
	t.Logf("replay resumed: both replicas answer again after %s", time.Since(resumed).Round(time.Millisecond))

	require.NoError(t, reg.Close())
	svcs, err := cli.Agent().Services()
	require.NoError(t, err)
	require.Empty(t, svcs, "services left at the agent")
	require.NoError(t, pg.Close())
}
