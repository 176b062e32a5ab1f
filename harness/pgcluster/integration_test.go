package pgcluster

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/limits"
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

// TestIntegration_PrimaryAndReplicas: a primary held to half a CPU and 2
// replicas; a write on the primary is read on both replicas; lag and
// metrics are read; Close leaves no process, folder or cgroup.
func TestIntegration_PrimaryAndReplicas(t *testing.T) {
	needPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, WithReplicas(2), WithPrimaryCPU(nil, 0.5), WithSetting("max_connections", "200"))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	t.Logf("primary and 2 replicas streaming after %v", time.Since(began).Round(time.Millisecond))

	p := c.Primary()
	if g := p.Group(); g == nil {
		t.Fatal("the primary has no cgroup")
	} else if st, err := g.Stats(); err != nil || (st.Mode != limits.ModeNone && (!g.Contains(p.Pid()) || st.CPUCores != 0.5)) {
		t.Fatalf("primary's cgroup: %+v, %v, contains postmaster %v", st, err, g.Contains(p.Pid()))
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
	dir, group := c.Dir(), p.Group().Path()
	began = time.Now()
	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed in %v", time.Since(began).Round(time.Millisecond))
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + itoa(pid)); err == nil {
			t.Fatalf("pid %d outlived Close", pid)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", dir).Output(); len(out) > 0 {
		t.Fatalf("processes of %s outlived Close: %s", dir, out)
	}
	for _, d := range []string{dir, group} {
		if _, err := os.Stat(d); d != "" && err == nil {
			t.Fatalf("%s outlived Close", d)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
