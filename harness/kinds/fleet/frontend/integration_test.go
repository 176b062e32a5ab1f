package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
	_ "github.com/chaoslab/chaoslab/harness/systems/etcd"
	"github.com/chaoslab/chaoslab/harness/systemtest"
)

func TestTableRouteAndDigest(t *testing.T) {
	tb := frontend.NewTable(1000, 7)
	if err := tb.Valid(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range 2000 {
		sh, ok := tb.Route(fmt.Sprintf("key-%d", i))
		if !ok {
			t.Fatalf("key-%d: no shard", i)
		}
		seen[sh.Cell] = true
	}
	if len(seen) != 7 {
		t.Fatalf("keys reached %d cells, want 7", len(seen))
	}
	other := frontend.NewTable(1000, 7)
	other[3].Epoch++
	if tb.Digest() == other.Digest() {
		t.Fatal("digest does not change with an epoch")
	}
	if frontend.Cell(1, 10) != 0 || frontend.Cell(10, 10) != 0 || frontend.Cell(11, 10) != 1 || frontend.Cell(44, 0) != 0 {
		t.Fatal("cells")
	}
}

// etcdCluster is a real 3-member etcd on local processes.
type etcdCluster struct{ c lab.Cluster }

func (e etcdCluster) Endpoints() []string { return e.c.Endpoints(lab.FromHost) }

func (e etcdCluster) Client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}

func startEtcd(t *testing.T) etcdCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, _ := systemtest.StartSystem(t, ctx, "etcd", "local", nil)
	return etcdCluster{c}
}

// Three servers in one process against a real 3-member etcd: every one
// completes its shard-map and routes, whether the table comes from the
// store or from peers; a server that leaves is forgotten by the others.
func TestIntegration_FrontendFleetRoutes(t *testing.T) {
	ec := startEtcd(t)
	for _, boot := range []string{frontend.FromStore, frontend.FromPeers} {
		t.Run(boot, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cli, err := ec.Client()
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			prefix := "/test/" + boot
			if err := frontend.SeedStore(ctx, cli, prefix, frontend.NewTable(3000, 5)); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			routes := map[string]string{}
			var wg sync.WaitGroup
			cancels := map[string]context.CancelFunc{}
			for i := 1; i <= 3; i++ {
				id := fmt.Sprintf("fe-%02d", i)
				sctx, scancel := context.WithCancel(ctx)
				cancels[id] = scancel
				wg.Add(1)
				go func() {
					defer wg.Done()
					st := frontend.DefaultSettings()
					st.Bootstrap, st.PeerThreads = boot, frontend.PerPeer
					st.Heartbeat, st.LeaseTTL = lab.Duration(200*time.Millisecond), lab.Duration(2*time.Second)
					st.BootstrapTimeout = lab.Duration(time.Second)
					err := frontend.Run(sctx, frontend.Config{
						Settings: st, ID: id, Index: i, Etcd: ec.Endpoints(), Prefix: prefix,
						Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
						OnListen: func(_, route string) {
							mu.Lock()
							routes[id] = route
							mu.Unlock()
						},
					})
					if err != nil {
						t.Errorf("%s: %v", id, err)
					}
				}()
				time.Sleep(300 * time.Millisecond)
			}
			defer func() {
				for _, c := range cancels {
					c()
				}
				wg.Wait()
			}()
			status := func(id string) frontend.Status {
				mu.Lock()
				addr := routes[id]
				mu.Unlock()
				var st frontend.Status
				resp, err := http.Get("http://" + addr + "/status")
				if err != nil {
					return st
				}
				defer resp.Body.Close()
				_ = json.NewDecoder(resp.Body).Decode(&st)
				return st
			}
			waitFor := func(what string, ok func() bool) {
				t.Helper()
				for deadline := time.Now().Add(20 * time.Second); !ok(); {
					if time.Now().After(deadline) {
						t.Fatalf("timed out waiting for %s", what)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			waitFor("all ready", func() bool {
				for i := 1; i <= 3; i++ {
					if st := status(fmt.Sprintf("fe-%02d", i)); !st.Ready || st.PeersKnown != 2 {
						return false
					}
				}
				return true
			})
			mu.Lock()
			addr := routes["fe-02"]
			mu.Unlock()
			resp, err := http.Get("http://" + addr + "/route?key=stream-1/shard-7")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("route: %d %s", resp.StatusCode, body)
			}
			if st := status("fe-03"); boot == frontend.FromPeers && st.TableFrom == "store" {
				t.Errorf("fe-03 read the store though its peers were ready: %+v", st)
			}
			cancels["fe-01"]()
			waitFor("fe-01 forgotten", func() bool {
				st := status("fe-02")
				return st.PeersKnown == 1 && st.Ready
			})
		})
	}
}
