package instances

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/placement/local"
)

// Instances start over their spread, each exit is recorded, the restart
// policy brings an instance back, and Stop ends them without an exit.
func TestGroupRestartsAndStops(t *testing.T) {
	env := localEnv(t, "instances-test-")
	dir := env.Dir
	var mu sync.Mutex
	var lines []string
	g := Start(context.Background(), Config{
		Env: env, Count: 2, Prefix: "client", Role: "client", Spread: 200 * time.Millisecond,
		Restart: true, RestartDelay: 100 * time.Millisecond,
		Program: func(i, inc int) lab.Program {
			if i == 0 && inc == 0 {
				return lab.Program{Command: []string{"sh", "-c", "echo first; exit 3"}}
			}
			return lab.Program{Command: []string{"sh", "-c", "echo again; sleep 30"}}
		},
		OnLine: func(i, inc int, line []byte) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, string(line))
		},
	})
	require.Eventually(t, func() bool { return g.Alive(0) && g.Alive(1) && g.Summary(0, nil).Starts == 2 }, 10*time.Second, 50*time.Millisecond)
	g.Stop()
	s0, s1 := g.Summary(0, nil), g.Summary(1, nil)
	require.Equal(t, "client-01", s0.ID)
	require.Len(t, s0.Exits, 1, "the exit of status 3; the stop at the end is not an exit")
	require.Equal(t, 3, s0.Exits[0].Code)
	require.Equal(t, "exited with status 3", s0.Exits[0].How)
	require.Empty(t, s1.Exits)
	require.Equal(t, filepath.Join(filepath.Base(dir), "logs", "client-01.log"), s0.Log)
	require.FileExists(t, filepath.Join(env.LogDir, "client-02.log"))
	mu.Lock()
	require.Contains(t, lines, "first")
	mu.Unlock()
	require.False(t, g.Alive(0) || g.Alive(1))
}

// An instance an operator stops stays down past its restart delay, and
// starts again at once when released.
func TestGroupHoldsAnInstanceDown(t *testing.T) {
	env := localEnv(t, "instances-hold-")
	g := Start(context.Background(), Config{
		Env: env, Count: 2, Prefix: "client", Role: "client", Restart: true, RestartDelay: 50 * time.Millisecond,
		Program: func(i, inc int) lab.Program { return lab.Program{Command: []string{"sleep", "30"}} },
	})
	defer g.Stop()
	require.Eventually(t, func() bool { return g.Alive(0) && g.Alive(1) }, 10*time.Second, 20*time.Millisecond)
	var tg lab.Target = &Target{G: g, I: 0}
	s, ok := tg.(lab.Stopper)
	require.True(t, ok, "an instance can be held down")
	require.NoError(t, s.Stop())
	require.Eventually(t, func() bool { return !g.Alive(0) }, 5*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // ten restart delays
	require.False(t, g.Alive(0), "the restart policy brought back an instance an operator stopped")
	require.True(t, g.Alive(1))
	require.NoError(t, s.Start(context.Background()))
	require.Eventually(t, func() bool { return g.Alive(0) }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, 2, g.Summary(0, nil).Starts)
}

// localEnv is a variant's environment on a local site of its own (closed
// with the test); it skips without root or cgroups.
func localEnv(t *testing.T, prefix string) *lab.Env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for cgroups")
	}
	if mode, _ := limits.Detect(); mode == limits.ModeNone {
		t.Skip("no cgroups")
	}
	p, err := local.New(lab.PlacementOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	site, err := p.Open(context.Background(), prefix+time.Now().Format("150405.000"), dir, slog.Default())
	require.NoError(t, err)
	t.Cleanup(func() { _ = site.Close() })
	env := &lab.Env{Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: slog.Default()}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	return env
}
