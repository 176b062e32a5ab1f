package kubernetes

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// holdEnv makes the test binary a controller that opens a site, starts
// one ZooKeeper server on it (its data on a claim), prints its
// namespace and waits: killed, or closing its site on SIGINT as a run
// does on Ctrl-C.
const holdEnv = "CHAOSLAB_KUBE_TEST_HOLD"

func TestHoldSiteHelper(t *testing.T) {
	if os.Getenv(holdEnv) == "" {
		t.Skip("a helper of TestIntegration_KubernetesLeavesNothing")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	plc, sys, topo, log := zooKeeperOnCluster(t, ctx)
	topo.Servers = 1
	dir := t.TempDir()
	runID := fmt.Sprintf("t-kube-hold-%d", time.Now().UnixNano()%1e9)
	site, err := plc.Open(ctx, runID, dir, log)
	require.NoError(t, err)
	defer func() { require.NoError(t, site.Close()) }()
	env := &lab.Env{RunID: runID, Dir: dir, LogDir: filepath.Join(dir, "logs"), T0: time.Now(), Site: site, Log: log}
	require.NoError(t, os.MkdirAll(env.LogDir, 0o755))
	_, err = sys.Start(ctx, env, topo)
	require.NoError(t, err)
	fmt.Printf("HELD %s\n", site.(*Site).Namespace())
	<-ctx.Done()
}

// After a run's controller is killed, the next run's sweep removes its
// namespace, pods, claims and volumes; after Ctrl-C the controller
// removes them itself. Each read back from the API server.
func TestIntegration_KubernetesLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plc, _, _, _ := zooKeeperOnCluster(t, ctx)
	k := plc.(*Placement).k
	if plc.(*Placement).storageClass() == "" {
		t.Skip("the cluster has no default StorageClass (./scripts/kube-up.sh makes one)")
	}

	ns, child := holdSite(t, ctx)
	require.NotEmpty(t, runObjects(t, ctx, k, ns), "the held run has its objects")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	began := time.Now()
	require.NoError(t, plc.Prepare(ctx, nil), "the next run's sweep")
	waitNothingLeft(t, ctx, k, ns)
	t.Logf("TIMING killed controller: namespace, pods, claims and volumes gone %s after the next run's sweep began", time.Since(began).Round(time.Millisecond))

	ns, child = holdSite(t, ctx)
	require.NoError(t, child.Process.Signal(os.Interrupt))
	began = time.Now()
	require.NoError(t, child.Wait(), "the controller closed its site and ended")
	require.Empty(t, runObjects(t, ctx, k, ns), "nothing left once the interrupted controller ended")
	t.Logf("TIMING Ctrl-C: the controller removed everything and ended in %s", time.Since(began).Round(time.Millisecond))
}

// holdSite starts the helper and waits until it holds a site.
func holdSite(t *testing.T, ctx context.Context) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHoldSiteHelper$", "-test.v")
	// Its own integration lock: this test holds the shared one.
	cmd.Env = append(os.Environ(), holdEnv+"=1", "CHAOSLAB_INTEGRATION_LOCK="+filepath.Join(t.TempDir(), "lock"))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if ns, ok := strings.CutPrefix(sc.Text(), "HELD "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return ns, cmd
		}
	}
	_ = cmd.Wait()
	t.Fatalf("the helper ended before it held a site")
	return "", nil
}

// runObjects are what the API server still has of namespace ns: the
// namespace, its pods and claims, volumes bound to its claims.
func runObjects(t *testing.T, ctx context.Context, k kubectl, ns string) []string {
	t.Helper()
	var left []string
	if _, err := k.run(ctx, nil, "get", "namespace", ns); err == nil {
		left = append(left, "namespace "+ns)
	}
	for _, kind := range []string{"pods", "persistentvolumeclaims"} {
		var list struct {
			Items []struct {
				Metadata objectMeta `json:"metadata"`
			} `json:"items"`
		}
		require.NoError(t, k.getJSON(ctx, &list, kind, "-n", ns))
		for _, o := range list.Items {
			left = append(left, kind+" "+o.Metadata.Name)
		}
	}
	vols, err := runVolumes(ctx, k, ns)
	require.NoError(t, err)
	for _, v := range vols {
		left = append(left, "persistentvolume "+v)
	}
	return left
}

func waitNothingLeft(t *testing.T, ctx context.Context, k kubectl, ns string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		left := runObjects(t, ctx, k, ns)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left of %s: %v", ns, left)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
