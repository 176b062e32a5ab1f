package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// openSite opens a site of the container placement for the test (the
// client image prepared when agent is set), skipping when there is no
// engine; its cleanup closes it and checks nothing of it is left.
func openSite(t *testing.T, agent bool) lab.Site {
	t.Helper()
	ctx := context.Background()
	p, err := New(lab.PlacementOptions{Log: slog.Default()})
	require.NoError(t, err)
	if err := p.Available(ctx); err != nil {
		t.Skip(err)
	}
	if agent {
		if err := p.Prepare(ctx, []lab.ImageNeed{{Name: lab.AgentImage}}); err != nil {
			t.Skipf("no client image: %v", err)
		}
	}
	runID := "placement-test-" + time.Now().Format("150405")
	s, err := p.Open(ctx, runID, t.TempDir(), slog.Default())
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		left, err := docker.Leftovers(ctx, runID)
		require.NoError(t, err)
		require.Empty(t, left)
	})
	return s
}

// chaoslab's own agent in a container of the client image, under a pids
// and a CPU limit: its stdout lines arrive, the harness reaches its port
// at the container's address, its threads and pids are read from /proc and
// its cgroup, and Stop ends it; the site's Close leaves nothing.
func TestIntegration_ContainerAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a container")
	}
	ctx := context.Background()
	s := openSite(t, true)
	host, adv := s.Listen()
	routes := make(chan string, 1)
	var log syncBuf
	cfg := map[string]any{"id": "fe-01", "index": 1, "etcd": []string{"http://etcd-nowhere:2379"}, "listen_host": host, "advertise": adv,
		"peer_threads": "per-peer", "pool_threads": 4, "bootstrap": "peers", "bootstrap_timeout": "3s", "heartbeat": "1s", "lease_ttl": "3s"}
	proc, err := s.Start(ctx, lab.Program{Name: "fe-01-0", Alias: "fe-01", Role: "frontend", Agent: "kinesis-frontend", Config: cfg,
		Limits: lab.Limits{Pids: 40, CPUCores: 0.5}, Stderr: &log,
		Stdout: func(line []byte) {
			var a struct{ Route string }
			if json.Unmarshal(line, &a) == nil && a.Route != "" {
				routes <- a.Route
			}
		}})
	require.NoError(t, err)
	var route string
	select {
	case route = <-routes:
	case <-time.After(20 * time.Second):
		t.Fatalf("no route printed:\n%s", log.b.String())
	}
	_, port, err := net.SplitHostPort(route)
	require.NoError(t, err)
	addr := net.JoinHostPort(proc.Host(), port)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/status")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 200*time.Millisecond, "no /status at %s", addr)
	st := proc.Stats()
	require.GreaterOrEqual(t, st.Threads, 2)
	require.True(t, st.Pids >= 2 && st.Pids <= 40, "pids %d", st.Pids)
	e := proc.Stop(5 * time.Second)
	require.True(t, e.Stopped, "%+v", e)
	require.NoError(t, proc.Release())
}

// Agents prepared ahead hold until released, and many released together
// start within a fraction of what the engine takes to start as many
// containers (about three a second here).
func TestIntegration_PreparedAgentsStartTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	ctx := context.Background()
	s := openSite(t, true)
	const n = 8
	host, adv := s.Listen()
	var mu sync.Mutex
	listened := map[string]time.Time{}
	pending := make([]lab.Pending, n)
	began := time.Now()
	for i := range n {
		id := "fe-" + string(rune('a'+i))
		cfg := map[string]any{"id": id, "index": i + 1, "etcd": []string{"http://etcd-nowhere:2379"}, "listen_host": host, "advertise": adv,
			"peer_threads": "per-peer", "pool_threads": 4, "bootstrap": "peers", "bootstrap_timeout": "3s", "heartbeat": "1s", "lease_ttl": "3s"}
		var err error
		pending[i], err = s.(lab.Preparer).Prepare(ctx, lab.Program{Name: id + "-0", Alias: id, Role: "frontend", Agent: "kinesis-frontend", Config: cfg,
			Stderr: &syncBuf{}, Stdout: func(line []byte) {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := listened[id]; !ok && bytes.Contains(line, []byte(`"route"`)) {
					listened[id] = time.Now()
				}
			}})
		require.NoError(t, err)
	}
	prepared := time.Since(began)
	time.Sleep(time.Second)
	mu.Lock()
	require.Empty(t, listened, "a held agent does not run")
	mu.Unlock()
	released := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, pd := range pending {
		wg.Go(func() { _, errs[i] = pd.Start(ctx) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(listened) == n }, 20*time.Second, 50*time.Millisecond)
	lo, hi := time.Now(), released
	for _, at := range listened {
		if at.Before(lo) {
			lo = at
		}
		if at.After(hi) {
			hi = at
		}
	}
	t.Logf("prepared %d agents in %s; released, they listened within %s of each other", n, prepared.Round(time.Millisecond), hi.Sub(lo).Round(time.Millisecond))
	require.Less(t, hi.Sub(lo), prepared/2, "released together, they start well within the time the engine took to start them")
}

// A program's output arrives whole: every stdout line once and in order,
// across the seconds in which testcontainers' log production would have
// started a new stream and lost the lines of that moment, and every
// stderr line in the program's log.
func TestIntegration_OutputEveryLine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a container")
	}
	ctx := context.Background()
	const img = "chaoslab/zookeeper:3.8.0-deb12" // any image with a shell
	if ok, err := docker.ImageExists(ctx, img); err != nil || !ok {
		t.Skipf("no %s (chaoslab images build): %v", img, err)
	}
	s := openSite(t, false)
	var mu sync.Mutex
	var got []string
	var log syncBuf
	// About a line a millisecond for 12 s, in bursts of 20: testcontainers'
	// log production starts a new stream every 5 s from the time it asks,
	// so lines in flight at that moment can be lost.
	const n = 12000
	script := `i=0; while [ $i -lt 600 ]; do seq $((i*20+1)) $((i*20+20)); [ $((i % 50)) = 0 ] && echo "e$((i / 50 + 1))" >&2; sleep 0.02; i=$((i+1)); done`
	proc, err := s.Start(ctx, lab.Program{Name: "lines", Role: "test", Image: img, Command: []string{"sh", "-c", script},
		Stderr: &log, Stdout: func(line []byte) { mu.Lock(); got = append(got, string(line)); mu.Unlock() }})
	require.NoError(t, err)
	e := proc.Exit()
	require.Equal(t, 0, e.Code, "%+v", e)
	require.NoError(t, proc.Release())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, n, "stdout lines")
	for i, l := range got {
		require.Equal(t, strconv.Itoa(i+1), l)
	}
	for i := 1; i <= 12; i++ {
		require.Contains(t, log.b.String(), "e"+strconv.Itoa(i)+"\n")
	}
}
