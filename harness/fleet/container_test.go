package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/docker"
	"github.com/chaoslab/chaoslab/harness/frontend"
	"github.com/chaoslab/chaoslab/harness/images"
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

// A front-end server in a container under --pids-limit: the harness reaches
// its /status on the published port, reads its threads from /proc and its
// pids cgroup, and stops it with a signal.
func TestIntegration_ContainerLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a container")
	}
	ctx := context.Background()
	if err := docker.Available(ctx); err != nil {
		t.Skip(err)
	}
	img := images.ChaoslabRef("")
	if ok, _ := docker.ImageExists(ctx, img); !ok {
		t.Skipf("no %s image (chaoslab images build)", img)
	}
	runID := "fleet-test-" + time.Now().Format("150405")
	t.Cleanup(func() { _, _ = docker.Sweep(context.Background(), runID) })
	net, err := testcontainers.GenericNetwork(ctx, testcontainers.GenericNetworkRequest{NetworkRequest: testcontainers.NetworkRequest{Name: runID, Labels: docker.Labels(runID)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = net.Remove(context.Background()) })
	cl := ContainerLauncher{Image: img, Network: runID, RunID: runID}
	var log syncBuf
	args := append([]string{"agent", "kinesis-frontend"}, cl.ServerArgs("fe-01")...)
	args = append(args, "--id", "fe-01", "--index", "1", "--etcd", "http://etcd-nowhere:2379")
	p, err := cl.Start(ctx, Launch{ID: "fe-01", Args: args, ThreadLimit: 40, CPUCores: 0.5, Stderr: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if p.Route() == "" || p.Pid() == 0 {
		t.Fatalf("route %q pid %d", p.Route(), p.Pid())
	}
	var st frontend.Status
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get("http://" + p.Route() + "/status")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /status at %s: %v\n%s", p.Route(), err, log.b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.ID != "fe-01" || st.Ready {
		t.Fatalf("status %+v", st)
	}
	th, err := frontend.ProcThreads(p.Pid())
	if err != nil || th < 2 {
		t.Fatalf("threads %d: %v", th, err)
	}
	if cur, _ := p.Pids(); cur < 2 || cur > 40 {
		t.Fatalf("pids.current %d", cur)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan ProcExit, 1)
	go func() { done <- p.Wait() }()
	select {
	case e := <-done:
		t.Logf("exit %+v", e)
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}
