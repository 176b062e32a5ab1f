package consulload

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/consullocal"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/limits"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func consulBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (runs consul processes): not with -short")
	}
	binOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		binPath, binErr = images.ConsulBinary(ctx, images.Options{})
	})
	if binErr != nil {
		t.Skipf("no consul binary (set CHAOSLAB_CONSUL, or run `chaoslab images build --only consul`): %v", binErr)
	}
	return binPath
}

// lab is 3 servers and one client agent in a memory cgroup.
type lab struct {
	c     *consullocal.Cluster
	agent *consullocal.Node
	group *limits.Group
	srv   *api.Client // a server's HTTP API
}

// startLab starts the cluster with the agent limited to limit bytes and,
// if gomemlimit is set, that GOMEMLIMIT in its environment.
func startLab(t *testing.T, ctx context.Context, limit int64, gomemlimit string) *lab {
	t.Helper()
	bin := consulBinary(t)
	if mode, why := limits.Detect(); mode == limits.ModeNone {
		t.Skipf("no cgroups here: %s", why)
	}
	m, err := limits.NewManager(fmt.Sprintf("consulload-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if m.Mode() == limits.ModeNone {
		t.Skipf("no cgroups here: %s", m.Reason())
	}
	g, err := m.NewGroup("agent1", limits.Limits{MemoryBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := consullocal.Start(ctx, consullocal.Options{
		Servers: 3, Agents: 1, Binary: bin, ExtraArgs: append([]string{"-log-level=warn"}, strings.Fields(os.Getenv("CONSULLOAD_ARGS"))...),
		Logs: func(n string) io.Writer {
			f, err := os.Create(filepath.Join(dir, n+".log"))
			if err != nil {
				return io.Discard
			}
			t.Cleanup(func() { f.Close() })
			return f
		},
		StartAgent: func(node string, cmd *exec.Cmd) error {
			if gomemlimit != "" {
				cmd.Env = append(os.Environ(), "GOMEMLIMIT="+gomemlimit)
			}
			return g.Start(cmd)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv, err := c.NewClient(c.Servers()[0])
	if err != nil {
		t.Fatal(err)
	}
	return &lab{c: c, agent: c.Agents()[0], group: g, srv: srv}
}

func (l *lab) pid() int {
	if !l.agent.Running() {
		return 0
	}
	return l.agent.Pid()
}
