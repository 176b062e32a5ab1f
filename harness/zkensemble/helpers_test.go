package zkensemble

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// tWriter sends log output to t.Log until the test's cleanup has run.
type tWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, nil))
}

// requireIntegration skips unless a real ZooKeeper can be run.
func requireIntegration(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped with -short")
	}
	if missing := missingDeps(); len(missing) > 0 {
		t.Skipf("integration test: ZooKeeper not installed (missing %s); run `apt-get install -y zookeeper` or call EnsureInstalled", strings.Join(missing, ", "))
	}
}

// startTest starts an ensemble for a test and closes it at the end; on
// failure it logs the tail of every member's log.
func startTest(t *testing.T, o Options, timeout time.Duration) *Ensemble {
	t.Helper()
	requireIntegration(t)
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	begin := time.Now()
	e, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Logf("TIMING start %d members to healthy: %v", len(e.Members), time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range e.Members {
				t.Log(m.logTail(40))
			}
		}
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// procsWithArg lists pids whose command line contains s.
func procsWithArg(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// The health rules are in harness/zkcheck; these apply them to members of
// this package.
type status = zkcheck.Status[*Member]

func health(sts []status) (*Member, []*Member, string) { return (&Ensemble{}).check().Health(sts) }

func leaderOf(sts []status) (*Member, error) { return (&Ensemble{}).check().LeaderOf(sts) }
