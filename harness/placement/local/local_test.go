package local

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
)

func site(t *testing.T) *Site {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for cgroups")
	}
	if mode, _ := limits.Detect(); mode == limits.ModeNone {
		t.Skip("no cgroups here")
	}
	p, err := New(lab.PlacementOptions{Log: slog.Default()})
	require.NoError(t, err)
	s, err := p.Open(context.Background(), "local-test-"+time.Now().Format("150405.000"), t.TempDir(), slog.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s.(*Site)
}

type lines struct {
	mu sync.Mutex
	b  []string
}

func (l *lines) add(b []byte) { l.mu.Lock(); l.b = append(l.b, string(b)); l.mu.Unlock() }

// A program over its memory limit is OOM-killed by the kernel, and the
// exit says so from the cgroup's own counter.
func TestOOMKillIsRecognised(t *testing.T) {
	s := site(t)
	var out lines
	p, err := s.Start(context.Background(), lab.Program{Name: "hog", Command: []string{"python3", "-c",
		"import sys; print('allocating', flush=True); a = bytearray(256 << 20); print('survived')"},
		Limits: lab.Limits{MemoryMB: 48}, Stdout: out.add, Stderr: &bytes.Buffer{}})
	require.NoError(t, err)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the hog did not end")
	}
	e := p.Exit()
	require.True(t, e.OOM, "%+v", e)
	require.Contains(t, e.How, "OOM killer")
	require.False(t, e.Stopped)
	require.Equal(t, []string{"allocating"}, out.b)
	require.Equal(t, int64(48)<<20, p.Stats().MemoryLimitBytes)
	require.NoError(t, p.Release())
}

// The pids limit refuses forks, and the refusals are counted; Stop ends
// the program and marks the exit as the harness's.
func TestPidsLimitAndStop(t *testing.T) {
	s := site(t)
	p, err := s.Start(context.Background(), lab.Program{Name: "forker", Command: []string{"sh", "-c",
		"for i in 1 2 3 4 5 6 7 8 9 10; do sleep 30 & done; sleep 30"}, Limits: lab.Limits{Pids: 4}, Stderr: &bytes.Buffer{}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().PidsRefused > 0 }, 10*time.Second, 100*time.Millisecond)
	require.LessOrEqual(t, p.Stats().Pids, int64(4))
	e := p.Stop(2 * time.Second)
	require.True(t, e.Stopped)
	require.Equal(t, "stopped by the harness", e.How)
	require.NoError(t, p.Release())
}

// Pause stops every process of the program, Resume continues them.
func TestPauseResume(t *testing.T) {
	s := site(t)
	p, err := s.Start(context.Background(), lab.Program{Name: "sleeper", Command: []string{"sleep", "30"}})
	require.NoError(t, err)
	require.NoError(t, p.Pause())
	require.Eventually(t, func() bool { return state(t, p.Pid()) == "T" }, 5*time.Second, 50*time.Millisecond)
	require.NoError(t, p.Resume())
	require.Eventually(t, func() bool { return state(t, p.Pid()) == "S" }, 5*time.Second, 50*time.Millisecond)
	p.Stop(time.Second)
}

func state(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[0]
}
