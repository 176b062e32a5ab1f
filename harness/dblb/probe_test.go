package dblb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/consulload"
	"github.com/chaoslab/chaoslab/harness/consullocal"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/limits"
)

// TestProbeAnswers (DBLB_PROBE=1): what app lookups get from an agent
// crash-looping under the DNS load (a measurement, not a test).
func TestProbeAnswers(t *testing.T) {
	if os.Getenv("DBLB_PROBE") == "" {
		t.Skip("DBLB_PROBE=1 runs the probe")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := images.ConsulBinary(ctx, images.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := limits.NewManager(fmt.Sprintf("dblbprobe-%d", os.Getpid()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := m.NewGroup("agent1", limits.Limits{MemoryBytes: 100 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c, err := consullocal.Start(ctx, consullocal.Options{Servers: 1, Agents: 1, Binary: bin, ExtraArgs: []string{"-log-level=warn"},
		StartAgent: func(_ string, cmd *exec.Cmd) error { return g.Start(cmd) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv, _ := c.NewClient(c.Servers()[0])
	for i, port := range []int{5433, 5434} {
		_, err := srv.Catalog().Register(&api.CatalogRegistration{Node: fmt.Sprintf("db%d", i), Address: "127.0.0.1",
			Service: &api.AgentService{ID: fmt.Sprintf("patroni-%d", i), Service: "patroni", Tags: []string{"replica"}, Port: port},
			Check:   &api.AgentCheck{CheckID: fmt.Sprintf("lag-%d", i), Status: api.HealthPassing, ServiceID: fmt.Sprintf("patroni-%d", i)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	svc := consulload.NewService()
	if err := consulload.Register(ctx, srv, svc); err != nil {
		t.Fatal(err)
	}
	agent := c.Agents()[0]
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	defer lcancel()
	go func() {
		for lctx.Err() == nil {
			select {
			case <-lctx.Done():
				return
			case <-agent.Done():
			}
			time.Sleep(time.Second)
			t0 := time.Now()
			err := agent.Restart(lctx)
			t.Logf("restart: %v (%s)", err, time.Since(t0).Round(time.Millisecond))
		}
	}()
	go func() { _, _ = consulload.Flap(lctx, srv, svc, time.Second) }()
	go func() {
		time.Sleep(5 * time.Second)
		_, _ = consulload.Run(lctx, consulload.Load{DNSAddr: agent.DNSAddr(), Service: svc.Name, Lookers: 25, TCP: true})
	}()
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for p := range 5 {
		wg.Go(func() {
			for lctx.Err() == nil {
				a := lookupSRV(lctx, agent.DNSAddr(), "replica.patroni.service.consul.", 2*time.Second, uint16(p))
				k := "ok"
				switch {
				case a.Err != nil:
					k = "err"
				case a.Empty():
					k = "empty " + a.RCode.String()
				}
				mu.Lock()
				counts[k]++
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	st, _ := g.Stats()
	t.Logf("counts %v, oom_kill %d", counts, st.OOMKills)
}
