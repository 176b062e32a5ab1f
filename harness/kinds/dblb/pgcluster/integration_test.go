package pgcluster

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/placement/container"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
	"github.com/chaoslab/chaoslab/harness/systemtest"
)

func needPostgres(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (runs postgres): not with -short")
	}
	if _, err := os.Stat(DefaultBinDir + "/postgres"); err != nil {
		t.Skipf("no postgresql-15 (scripts/setup.sh installs it): %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the servers as the postgres user: needs root")
	}
}

// TestIntegration_PrimaryAndReplicas: on each placement, a primary held
// to half a CPU and 2 replicas; a write on the primary is read on both
// replicas; lag and metrics are read; a paused replica lags and catches
// up; Close leaves no process, container, folder or cgroup.
func TestIntegration_PrimaryAndReplicas(t *testing.T) {
	for _, placement := range []string{"local", "docker"} {
		t.Run(placement, func(t *testing.T) { primaryAndReplicas(t, placement) })
	}
}

func primaryAndReplicas(t *testing.T, placement string) {
	needPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, env := systemtest.OpenSite(t, ctx, placement, []lab.ImageNeed{{Name: ImageName, Defaults: ImageCandidates()}})
	began := time.Now()
	c, err := Start(ctx, env.Site, WithReplicas(2), WithPrimaryCPU(0.5), WithSetting("max_connections", "200"))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	t.Logf("%s: primary and 2 replicas streaming after %v", placement, time.Since(began).Round(time.Millisecond))

	p := c.Primary()
	if cores, err := p.CPU(); err != nil || cores != 0.5 {
		t.Fatalf("the primary's CPU limit read back: %v, %v", cores, err)
	}
	if _, err := p.Pool().Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 10000) g`); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Replicas() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var n int
			err := r.Pool().QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			if err == nil && n == 10000 {
				t.Logf("%s has the 10000 rows after %v", r.Name(), time.Since(deadline.Add(-10*time.Second)).Round(time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d rows, %v", r.Name(), n, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := r.Pool().Exec(ctx, `INSERT INTO t VALUES (0, 'x')`); err == nil {
			t.Fatalf("%s accepted a write", r.Name())
		}
	}
	lags, err := c.Lags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lags {
		t.Logf("lag %+v", l)
		if l.State != "streaming" || l.Err != nil {
			t.Fatalf("replica not streaming: %+v", l)
		}
	}
	m, err := p.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("primary metrics %+v", m)
	if m.XactCommit == 0 || m.TupInserted < 10000 || m.CPUSeconds <= 0 {
		t.Fatalf("primary metrics %+v", m)
	}

	// A paused replica lags; resumed, it catches up.
	r1 := c.Replicas()[0]
	if err := r1.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pool().Exec(ctx, `INSERT INTO t SELECT g, 'y' FROM generate_series(10001, 20000) g`); err != nil {
		t.Fatal(err)
	}
	lags, _ = c.Lags(ctx)
	t.Logf("replica1 paused: %+v", lags[0])
	if lags[0].Bytes == 0 || lags[0].Err == nil || lags[0].CaughtUp {
		t.Fatalf("a paused replica shows no lag: %+v", lags[0])
	}
	if err := r1.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStreaming(ctx); err != nil {
		t.Fatal(err)
	}

	pids := []int{}
	for _, s := range c.Servers() {
		pids = append(pids, s.Pid())
	}
	dirs := []string{}
	for _, s := range c.Servers() {
		if d := s.Layout().HostDataDir; d != "" {
			dirs = append(dirs, d)
		}
	}
	began = time.Now()
	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed in %v", time.Since(began).Round(time.Millisecond))
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + itoa(pid)); pid > 0 && err == nil && placement == "local" {
			t.Fatalf("pid %d outlived Close", pid)
		}
	}
	if err := env.Site.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Fatalf("%s outlived the site", d)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
