package pgcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/docker"
)

// TestIntegration_Containers: a primary held to half a CPU and 2 replicas
// in containers on a network of the test's; a write on the primary is
// read on both replicas; the primary's CPU is read from its container's
// postmaster; Close leaves no container.
func TestIntegration_Containers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (runs postgres containers): not with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("no container engine: %v", err)
	}
	img, err := docker.FirstImage(ctx, ImageCandidates()...)
	if err != nil {
		t.Skipf("no postgresql image (chaoslab images build --only postgresql): %v", err)
	}
	runID := fmt.Sprintf("chaoslab-pgtest-%08x", uint32(time.Now().UnixNano()))
	net, err := docker.NewNetwork(ctx, runID, Component)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = docker.Sweep(context.Background(), runID) }()
	began := time.Now()
	c, err := Start(ctx, WithReplicas(2), WithPrimaryCPU(nil, 0.5), WithSetting("max_connections", "100"),
		WithContainers(Containers{Network: net, RunID: runID, Image: img, LogDir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("primary %s and 2 replicas streaming in containers after %v", c.Primary().Addr(), time.Since(began).Round(time.Millisecond))
	p := c.Primary()
	if _, err := p.Pool().Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 10000) g`); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Replicas() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int
			if err := r.Pool().QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err == nil && n == 10000 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not have the rows", r.Name())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	m, err := p.Metrics(ctx)
	if err != nil || m.CPUSeconds <= 0 || m.XactCommit == 0 {
		t.Fatalf("primary metrics: %+v, %v", m, err)
	}
	if cores, err := p.ctr0.ctr.CPULimit(ctx); err != nil || cores != 0.5 {
		t.Fatalf("primary's container CPU limit: %v, %v", cores, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := net.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	left, err := docker.Leftovers(ctx, runID)
	if err != nil || len(left) > 0 {
		t.Fatalf("left: %v, %v", left, err)
	}
}
