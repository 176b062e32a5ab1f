package lab

import (
	"context"
	"log/slog"
	"time"
)

// Roles members can have. A system says which of them its members take.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	RoleObserver = "observer"
	// RoleAgent is a client agent (Consul): a member that holds no data.
	RoleAgent = "agent"
)

// A System is a coordination service (zookeeper, etcd, consul) that a
// scenario runs against, registered by name.
type System interface {
	Name() string
	// NewTopology returns the system's topology settings with their
	// defaults; the scenario's topology.<name> is decoded into it.
	NewTopology() Settings
	// Roles are the roles its members can have (selectors name them).
	Roles() []string
	// Prepare installs or checks, once per run, what it needs on the
	// placement (packages, a binary); images are the placement's.
	Prepare(ctx context.Context, p Placement, log *slog.Logger) error
	// Probe is a member as it would run on the named placement, for
	// asking faults whether they can act on it before anything starts; an
	// error says the system cannot run there.
	Probe(placement string) (Member, error)
	// Start starts a cluster of the topology on env.Site and returns once
	// it is healthy.
	Start(ctx context.Context, env *Env, topo Settings) (Cluster, error)
	// SampleEvery is the period of its sampler.
	SampleEvery() time.Duration
	// Series and Metrics are what its sampler records and what is derived
	// from it.
	Series() []SeriesDef
	Metrics() []MetricDef
}

// SystemProgress is implemented by a system with a few figures of its
// servers' latest sample worth showing a person watching a run (the most
// requests outstanding at any server), each a key and a value.
type SystemProgress interface {
	Progress(round []MemberSample) []slog.Attr
}

// DataHolder is implemented by a cluster whose servers keep their data
// on this machine: the runner removes these folders once the cluster is
// closed, unless the run keeps its data (chaoslab run --keep-data).
type DataHolder interface {
	DataDirs() []string
}

// View is where an address is used from.
type View int

const (
	// FromHost: the harness on this machine.
	FromHost View = iota
	// FromSite: a program started on the variant's site (a container on
	// the run's network reaches servers by name).
	FromSite
)

// Cluster is a running cluster of one system.
type Cluster interface {
	Members() []Member
	// Endpoints are the client addresses (host:port, or URLs where the
	// system's clients want them), as seen from v.
	Endpoints(v View) []string
	// ClientEnv is what a client program (the i-th instance) needs to
	// reach the cluster, as environment variables (CHAOSLAB_ZK_CONNECT...),
	// seen from v.
	ClientEnv(v View, i int) map[string]string
	// Leader is the member clients' writes go through, once one answer
	// is stable.
	Leader(ctx context.Context) (Member, error)
	// WaitHealthy waits until every member serves and there is one stable
	// leader, or ctx ends (its error says what is wrong).
	WaitHealthy(ctx context.Context) error
	// Sample is one reading of every running member's own figures (the
	// series the system declares), each with a deadline.
	Sample(ctx context.Context) []MemberSample
	// Limit holds the servers to their topology's limits (CPU share) from
	// now on, restarted members included; called once the warm-up's
	// workload is steady (its first load ran at full speed).
	Limit(ctx context.Context) error
	// Version is the servers' version ("" when unknown).
	Version(ctx context.Context) string
	Close() error
}

// Member is one server or agent of a cluster: a fault target.
type Member interface {
	Target
	// Role asks the member what it is now (leader, follower, agent).
	Role(ctx context.Context) (string, error)
	Running() bool
	Paused() bool
}

// MemberSample is one reading of one member.
type MemberSample struct {
	T      float64 // on the variant's clock
	Member string
	// OK is false when it did not answer (a paused server): a gap.
	OK   bool
	Role string
	// Values by series name (server.outstanding_requests...).
	Values map[string]float64
}

// ConnLister is implemented by a system whose clusters are ConnSamplers:
// a metric or series with ServerView can be judged on it (validate refuses
// one on another system, with the reason).
type ConnLister interface {
	ListsClientConnections() string // how, e.g. "cons"
}

// ClientRelayer is implemented by a system whose servers do not list
// their client connections but whose clients the lab can count on their
// way there: a relay of the lab's on loopback in front of each client
// (harness/infra/clientproxy), so where the lab's host runs the client
// (the local placement) and for a kind that relays its clients.
type ClientRelayer interface {
	ConnLister
	// RelaysClients is true: the lab, not the servers, counts them.
	RelaysClients() bool
}

// RelayedCluster is a cluster of a ClientRelayer: what a client is told,
// with the addresses of the relays in place of the servers'.
type RelayedCluster interface {
	// ClientAddrs are the servers' client addresses (host:port) from the
	// host.
	ClientAddrs() []string
	// ClientEnvVia is ClientEnv(FromHost, i) with each server address
	// replaced by via(address).
	ClientEnvVia(i int, via func(addr string) string) map[string]string
}

// ConnSampler is implemented by a cluster whose servers can list their
// client connections (ZooKeeper's cons): the servers' view of each client,
// whatever the client is and whether it reports anything itself.
type ConnSampler interface {
	Connections(ctx context.Context) []ConnSample
}

// ConnSample is one client connection as a server counts it.
type ConnSample struct {
	Member string
	// Remote is the client's address as the server sees it (ip:port).
	Remote string
	// Session identifies the connection's session ("" when none yet).
	Session string
	// Outstanding are its requests the server has not answered; Received
	// and Sent its packets since the connection was made.
	Outstanding, Received, Sent float64
}
