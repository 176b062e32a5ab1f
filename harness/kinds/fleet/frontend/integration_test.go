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

// servers runs front-end servers in this process and reads their status.
type servers struct {
	t      *testing.T
	ec     etcdCluster
	prefix string
	boot   string
	mu     sync.Mutex
	routes map[string]string
	wg     sync.WaitGroup
	stops  map[string]context.CancelFunc
}

func newServers(t *testing.T, ec etcdCluster, prefix, boot string) *servers {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := ec.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := frontend.SeedStore(ctx, cli, prefix, frontend.NewTable(3000, 5)); err != nil {
		t.Fatal(err)
	}
	s := &servers{t: t, ec: ec, prefix: prefix, boot: boot, routes: map[string]string{}, stops: map[string]context.CancelFunc{}}
	t.Cleanup(s.stopAll)
	return s
}

// start runs incarnation inc of server i until stop or the test's end.
func (s *servers) start(i, inc int) {
	id := fmt.Sprintf("fe-%02d", i)
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.stops[id] = cancel
	s.mu.Unlock()
	st := frontend.DefaultSettings()
	st.Bootstrap, st.PeerThreads = s.boot, frontend.PerPeer
	st.Heartbeat, st.LeaseTTL = lab.Duration(200*time.Millisecond), lab.Duration(2*time.Second)
	st.BootstrapTimeout = lab.Duration(time.Second)
	s.wg.Go(func() {
		err := frontend.Run(ctx, frontend.Config{
			Settings: st, ID: id, Index: i, Incarnation: inc, Etcd: s.ec.Endpoints(), Prefix: s.prefix,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			OnListen: func(_, route string) {
				s.mu.Lock()
				s.routes[id] = route
				s.mu.Unlock()
			},
		})
		if err != nil {
			s.t.Errorf("%s: %v", id, err)
		}
	})
}

func (s *servers) stop(id string) {
	s.mu.Lock()
	c := s.stops[id]
	s.mu.Unlock()
	c()
}

func (s *servers) stopAll() {
	s.mu.Lock()
	for _, c := range s.stops {
		c()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *servers) route(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routes[id]
}

func (s *servers) status(id string) frontend.Status {
	var st frontend.Status
	resp, err := http.Get("http://" + s.route(id) + "/status")
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st
}

// ready: servers first to last all route, each knowing every other.
func (s *servers) ready(first, last int) func() bool {
	return func() bool {
		for i := first; i <= last; i++ {
			if st := s.status(fmt.Sprintf("fe-%02d", i)); !st.Ready || st.PeersKnown != last-first {
				return false
			}
		}
		return true
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Three servers in one process against a real 3-member etcd: every one
// completes its shard-map and routes, whether the table comes from the
// store or from peers; a server that leaves is forgotten by the others.
func TestIntegration_FrontendFleetRoutes(t *testing.T) {
	ec := startEtcd(t)
	for _, boot := range []string{frontend.FromStore, frontend.FromPeers} {
		t.Run(boot, func(t *testing.T) {
			s := newServers(t, ec, "/test/"+boot, boot)
			for i := 1; i <= 3; i++ {
				s.start(i, 0)
				time.Sleep(300 * time.Millisecond)
			}
			waitFor(t, "all ready", s.ready(1, 3))
			resp, err := http.Get("http://" + s.route("fe-02") + "/route?key=stream-1/shard-7")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("route: %d %s", resp.StatusCode, body)
			}
			if st := s.status("fe-03"); boot == frontend.FromPeers && st.TableFrom == "store" {
				t.Errorf("fe-03 read the store though its peers were ready: %+v", st)
			}
			s.stop("fe-01")
			waitFor(t, "fe-01 forgotten", func() bool {
				st := s.status("fe-02")
				return st.PeersKnown == 1 && st.Ready
			})
		})
	}
}

// A server killed before its lease ran out leaves its registration, and
// its next incarnation registers over it (no delete between): its peers
// must drop the dead address and reach the new one, or they wait on it
// for good and never route (as the health check then saw on containers).
func TestIntegration_PeerRegisteredAgainIsReachedAtItsNewAddress(t *testing.T) {
	ec := startEtcd(t)
	prefix := "/test/again"
	s := newServers(t, ec, prefix, frontend.FromStore)
	cli, err := ec.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lease, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	dead, _ := json.Marshal(frontend.Member{ID: "fe-03", Index: 3, Peer: "127.0.0.1:9", Route: "127.0.0.1:9"})
	if _, err := cli.Put(ctx, frontend.MembersPrefix(prefix)+"fe-03", string(dead), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	s.start(1, 0)
	s.start(2, 0)
	waitFor(t, "fe-01 and fe-02 learn the dead fe-03", func() bool { return s.status("fe-01").PeersKnown == 2 && s.status("fe-02").PeersKnown == 2 })
	s.start(3, 1)
	waitFor(t, "all three route, fe-03 reached at its new address", s.ready(1, 3))
}
