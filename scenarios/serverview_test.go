package scenarios

import (
	"os"
	"strings"
	"testing"
)

// A per-client figure the servers count from their list of client
// connections (ZooKeeper's cons) is refused on a system that gives no such
// list, with the reason, naming the line and field; the same scenario on
// ZooKeeper validates.
func TestServerViewNeedsConnectionList(t *testing.T) {
	src, err := os.ReadFile("../examples/exec-leader-stall.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("exec-leader-stall.yaml", src); err != nil {
		t.Fatalf("on ZooKeeper: %v", err)
	}
	y := strings.Replace(string(src), "system: zookeeper", "system: etcd", 1)
	y = strings.Replace(y, "  zookeeper:\n    servers: 3\n    tick_ms: 2000\n    sync_limit: 5\n", "  etcd:\n    members: 3\n", 1)
	_, err = Parse("exec-etcd.yaml", []byte(y))
	if err == nil {
		t.Fatal("clients.requests_per_s.max_from_fault on etcd validated")
	}
	msg := err.Error()
	for _, want := range []string{"exec-etcd.yaml:", "hypotheses[1].metric", "clients.requests_per_s.max_from_fault is what the servers count of each client", "which etcd does not give"} {
		if !strings.Contains(msg, want) {
			t.Errorf("want %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "hypotheses[0]") || strings.Contains(msg, "hypotheses[2]") {
		t.Errorf("the process and client figures are judged on any system:\n%s", msg)
	}
}
