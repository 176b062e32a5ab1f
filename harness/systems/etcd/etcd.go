// Package etcd is the etcd system: a cluster of the etcd server built from
// tools/etcd, described once and started by the placement (local
// processes on loopback, containers of the etcd project's image or its
// local equivalent), its members and their roles (raft leader or
// follower, from each member's status), its health, the replacement of a
// member (member remove, member add, a fresh server joining the existing
// cluster), and a sampler of each member's status on the run's clock.
package etcd

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Images.
const (
	// DefaultImage is what `chaoslab images build` produces: FROM scratch
	// with static etcd, etcdctl and etcdutl.
	DefaultImage = images.EtcdRef
	// OfficialImage is the etcd project's image, for machines that have it.
	OfficialImage = "gcr.io/etcd-development/etcd:" + images.EtcdVersion
	// imageBinary is the server in both images (the official one sets it
	// as its command, chaoslab's as its entrypoint).
	imageBinary = "/usr/local/bin/etcd"
)

// Name is the system's registered name.
const Name = "etcd"

func init() { lab.RegisterSystem(&System{}) }

// Topology is an etcd cluster.
type Topology struct {
	// Members is the number of etcd members, 1 to 7.
	Members int `yaml:"members" json:"members"`
	// Image is the members' image on the docker placement (default: the
	// etcd project's image, else the local equivalent).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
}

// Check validates the topology.
func (t *Topology) Check() []lab.Problem {
	var c lab.Checks
	c.Need(t.Members >= 1 && t.Members <= 7, "members", "want 1 to 7, got %d", t.Members)
	return c
}

// Images: the members' image.
func (t *Topology) Images() []lab.ImageNeed {
	return []lab.ImageNeed{{Name: Name, Ref: t.Image, Defaults: []string{OfficialImage, DefaultImage}}}
}

// Facts describe the cluster in a report.
func (t *Topology) Facts() []lab.Fact {
	return []lab.Fact{{Name: "etcd", Value: fmt.Sprintf("%d members, etcd %s", t.Members, images.EtcdVersion)}}
}

// System is etcd.
type System struct {
	mu     sync.Mutex
	binary string // the local server binary, once prepared
}

func (*System) Name() string               { return Name }
func (*System) NewTopology() lab.Settings  { return &Topology{Members: 3} }
func (*System) Roles() []string            { return []string{lab.RoleLeader, lab.RoleFollower} }
func (*System) SampleEvery() time.Duration { return time.Second }
func (*System) Metrics() []lab.MetricDef   { return nil }

// ListsClientConnections: etcd lists none; the lab relays each client's
// gRPC connections and counts its streams (lab.ClientRelayer).
func (*System) ListsClientConnections() string {
	return "a relay of the lab's in front of each client, which counts its gRPC streams (watches included) or HTTP requests (local placement only)"
}

// RelaysClients: the lab counts what etcd does not.
func (*System) RelaysClients() bool { return true }
func (*System) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: "server.proposals_pending", Title: "Raft proposals pending per member (/metrics)", Unit: "proposals"},
		{Name: "server.db_size_mb", Title: "etcd database size per member (MiB, /metrics)", Unit: "MiB"},
		{Name: lab.SeriesServerRequests, Title: "gRPC calls each member started, its JSON gateway's included (cumulative, /metrics grpc_server_started_total)", Unit: "requests"},
	}
}

// startedCalls counts a member's gRPC calls, one line per method: their
// sum is lab.SeriesServerRequests.
const startedCalls = "grpc_server_started_total"

// sampled are the gauges of a member's /metrics the sampler keeps, by
// the series they become (and a scale).
var sampled = map[string]struct {
	series string
	scale  float64
}{
	"etcd_server_proposals_pending":    {"server.proposals_pending", 1},
	"etcd_mvcc_db_total_size_in_bytes": {"server.db_size_mb", 1.0 / (1 << 20)},
}

// Prepare builds (or finds in the cache) the etcd server where programs
// of this machine run (local processes); images are the placement's.
func (s *System) Prepare(ctx context.Context, p lab.Placement, log *slog.Logger) error {
	bin, err := servers.Binary(ctx, p, log, Name, images.EtcdVersion, images.EtcdBinary)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.binary = bin
	s.mu.Unlock()
	return nil
}

// Probe is a member as it runs on any placement: every generic fault
// acts on it through its placement.
func (*System) Probe(string) (lab.Member, error) { return &servers.Member{}, nil }
