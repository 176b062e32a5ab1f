package consulload

import (
	"context"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/tier"
)

// The scale of IL-0206 here: GitLab's 500 MB pod limit over an assumed
// ~100 MB idle agent is 5 idle agents; this agent's idle charge is ~21 MiB,
// so the scaled limit is 100 MiB and the raised limit (GitLab's 1 GB) 200 MiB.
const (
	scaledLimit = 100 << 20
	raisedLimit = 2 * scaledLimit
	// vulnerableLookers is the lookups in flight at once that take the
	// agent to ~150 MiB without a limit.
	vulnerableLookers = 25
	trialFor          = 20 * time.Second
	// softLimit is the GOMEMLIMIT of the third variant: 80% of the hard
	// limit, room for what the Go runtime does not count (stacks' slack,
	// the binary's pages the cgroup is charged for).
	softLimit = "80MiB"
)

type trialResult struct {
	charged, rss int64
	oomKills     uint64
	counts       Counts
}

// trial runs the vulnerable load for trialFor against an agent under
// limit (and GOMEMLIMIT gomemlimit, if set) and reads its cgroup.
func trial(t *testing.T, limit int64, gomemlimit string) trialResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := startLab(t, ctx, limit, gomemlimit)
	svc := NewService()
	if err := Register(ctx, l.srv, svc); err != nil {
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(ctx, trialFor)
	defer lcancel()
	rec := make(chan []Sample)
	go func() { rec <- Record(lctx, l.proc, 50*time.Millisecond) }()
	go func() { _, _ = Flap(lctx, l.srv, svc, time.Second) }()
	cnt, err := Run(lctx, Load{DNSAddr: l.dnsAddr(), Service: svc.Name, Lookers: vulnerableLookers, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	samples := <-rec
	charged, rss, ooms := Peak(samples)
	last := samples[len(samples)-1]
	r := trialResult{charged: max(charged, last.PeakBytes), rss: rss, oomKills: ooms, counts: cnt}
	killedAt := "-"
	for _, s := range samples {
		if s.OOMKills > 0 {
			killedAt = s.At.Round(10 * time.Millisecond).String()
			break
		}
	}
	t.Logf("limit %d MiB GOMEMLIMIT=%q, %d lookers over TCP: peak charged %d MiB (max_usage %d MiB), rss %d MiB, oom_kill %d (first seen at %s), agent running %v; %v",
		limit>>20, gomemlimit, vulnerableLookers, charged>>20, last.PeakBytes>>20, rss>>20, ooms, killedAt, l.agent.Running(), cnt)
	return r
}

// TestIntegration_AgentOOMKilledByLookups: the vulnerable load gets the
// agent OOM-killed by the kernel under the scaled limit, and not under
// the raised limit, nor with a soft limit (GOMEMLIMIT) under the same
// hard limit.
func TestIntegration_AgentOOMKilledByLookups(t *testing.T) {
	tier.Release(t, "TestIntegration_ReplayIL0206 (the agents OOM-killed by the lookup load, again and again)")
	t.Run("scaled limit", func(t *testing.T) {
		r := trial(t, scaledLimit, "")
		if r.oomKills == 0 {
			t.Fatalf("no OOM kill under %d MiB (peak %d MiB)", scaledLimit>>20, r.charged>>20)
		}
	})
	t.Run("raised limit", func(t *testing.T) {
		r := trial(t, raisedLimit, "")
		if r.oomKills != 0 {
			t.Fatalf("%d OOM kills under %d MiB", r.oomKills, raisedLimit>>20)
		}
		if r.counts.Lookups == 0 {
			t.Fatal("no lookup answered")
		}
	})
	t.Run("GOMEMLIMIT", func(t *testing.T) {
		r := trial(t, scaledLimit, softLimit)
		if r.oomKills != 0 {
			t.Fatalf("%d OOM kills under %d MiB with GOMEMLIMIT", r.oomKills, scaledLimit>>20)
		}
	})
}
