package scenarios

import (
	"os"
	"strings"
	"testing"
)

// A per-client figure the servers count from their list of client
// connections (ZooKeeper's cons) validates on etcd too, where a relay of
// the lab's in front of each client counts it (on the local placement:
// the runner refuses it on containers, harness/runner's
// TestRelayedFiguresOnDockerRefused).
func TestServerViewOnEveryListingSystem(t *testing.T) {
	src, err := os.ReadFile("../examples/exec-leader-stall.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("exec-leader-stall.yaml", src); err != nil {
		t.Fatalf("on ZooKeeper: %v", err)
	}
	y := strings.Replace(string(src), "system: zookeeper", "system: etcd", 1)
	y = strings.Replace(y, "  zookeeper:\n    servers: 3\n    tick_ms: 2000\n    sync_limit: 5\n", "  etcd:\n    members: 3\n", 1)
	s, err := Parse("exec-etcd.yaml", []byte(y))
	if err != nil {
		t.Fatalf("on etcd: %v", err)
	}
	if got := s.ServerViewMetrics(); len(got) != 1 || got[0] != "clients.requests_per_s.max_from_fault" {
		t.Errorf("server-view metrics = %v", got)
	}
}
