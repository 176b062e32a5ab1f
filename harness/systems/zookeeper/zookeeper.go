// Package zookeeper is the ZooKeeper system: an ensemble described once
// (zoo.cfg and myid per server, Debian's ZooKeeper 3.8 jars on this
// machine or the official image's entrypoint in a container) and started
// by the placement, its members and their roles, its health and leader
// rules (harness/systems/zookeeper/zkcheck), the replace fault's gates, initLimit, and a
// sampler of the servers' own figures (mntr, cons, their logs) on the
// run's clock.
package zookeeper

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Name is the system's registered name.
const Name = "zookeeper"

func init() { lab.RegisterSystem(System{}) }

// Topology is a ZooKeeper ensemble and its zoo.cfg settings.
type Topology struct {
	// Servers is the number of ensemble members, 1 to 7.
	Servers int `yaml:"servers" json:"servers"`
	// Observers are non-voting members (peerType=observer) added after
	// the voting ones (zk4, zk5 with 3 servers), 0 to 5. Their role is
	// observer; target them as observers or by name.
	Observers int `yaml:"observers" json:"observers"`
	// TickMS is zoo.cfg's tickTime in milliseconds.
	TickMS int `yaml:"tick_ms" json:"tick_ms"`
	// InitLimit is zoo.cfg's initLimit, in ticks.
	InitLimit int `yaml:"init_limit" json:"init_limit"`
	// SyncLimit is zoo.cfg's syncLimit, in ticks.
	SyncLimit int `yaml:"sync_limit" json:"sync_limit"`
	// HeapMB is the JVM -Xmx of each server, in MiB.
	HeapMB int `yaml:"heap_mb" json:"heap_mb"`
	// Image is the servers' image on the docker placement (default: the
	// official image, else the local equivalent).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// CPUQuota holds each server to this many cores once the tree is
	// seeded (0 = no limit). It keeps the ratio of client demand to server
	// capacity of a fleet of hundreds of clients when a dozen stand in.
	CPUQuota float64 `yaml:"cpu_quota" json:"cpu_quota"`
	// MaxClientCnxns is zoo.cfg's per-IP connection limit (0 = unlimited).
	MaxClientCnxns int `yaml:"max_client_cnxns" json:"max_client_cnxns"`
}

// Bounds of the topology.
const (
	// MaxTickMS is the longest tick: ZooKeeper counts sessions (2 to 20
	// ticks) and a follower's sync (init_limit, sync_limit) in ticks.
	MaxTickMS = 10000
	// MaxLimitMS bounds init_limit and sync_limit in time (10 min).
	MaxLimitMS = 10 * 60 * 1000
	// MaxHeapMB is the largest server heap.
	MaxHeapMB = 8192
	// MaxObservers is the most observers: each is one more JVM of heap_mb
	// on the same machine.
	MaxObservers = 5
)

// Check validates the topology.
func (t *Topology) Check() []lab.Problem {
	var c lab.Checks
	c.Need(t.Servers >= 1 && t.Servers <= 7, "servers", "want 1 to 7, got %d", t.Servers)
	c.Need(t.Observers >= 0 && t.Observers <= MaxObservers, "observers", "want 0 to %d (each is one more JVM of heap_mb on this machine), got %d", MaxObservers, t.Observers)
	c.Need(t.Observers == 0 || t.Servers >= 2, "observers", "%d observers need at least 2 servers to follow (a single server runs standalone), got %d", t.Observers, t.Servers)
	c.Need(t.TickMS >= 100, "tick_ms", "want at least 100, got %d", t.TickMS)
	c.Need(t.TickMS <= MaxTickMS, "tick_ms", "%d ms is more than %d: session timeouts (2 to 20 ticks) and elections would take minutes", t.TickMS, MaxTickMS)
	c.Need(t.InitLimit >= 1, "init_limit", "want at least 1, got %d", t.InitLimit)
	c.Need(t.SyncLimit >= 1, "sync_limit", "want at least 1, got %d", t.SyncLimit)
	c.Need(t.InitLimit*t.TickMS <= MaxLimitMS || t.TickMS > MaxTickMS, "init_limit", "%d ticks of %d ms is more than %d min for a follower to sync", t.InitLimit, t.TickMS, MaxLimitMS/60000)
	c.Need(t.SyncLimit*t.TickMS <= MaxLimitMS || t.TickMS > MaxTickMS, "sync_limit", "%d ticks of %d ms is more than %d min for a follower to answer", t.SyncLimit, t.TickMS, MaxLimitMS/60000)
	c.Need(t.HeapMB >= 32, "heap_mb", "want at least 32 (the least a ZooKeeper JVM starts in), got %d", t.HeapMB)
	c.Need(t.HeapMB <= MaxHeapMB, "heap_mb", "%d MiB is more than %d MiB: 3 to 7 servers of that heap do not fit one machine", t.HeapMB, MaxHeapMB)
	c.Msg("cpu_quota", lab.CheckCPUs(t.CPUQuota, true))
	c.Need(t.MaxClientCnxns >= 0, "max_client_cnxns", "want >= 0 (0 is unlimited), got %d", t.MaxClientCnxns)
	return c
}

// ServerHeapMB is each server's heap, which holds the whole data tree.
func (t *Topology) ServerHeapMB() int { return t.HeapMB }

// Images: the servers' image.
func (t *Topology) Images() []lab.ImageNeed {
	return []lab.ImageNeed{{Name: Name, Ref: t.Image, Defaults: []string{"zookeeper:3.8", images.ZooKeeperRef}}}
}

// Facts describe the ensemble in a report.
func (t *Topology) Facts() []lab.Fact {
	cpu := "no limit"
	if t.CPUQuota > 0 {
		cpu = strconv.FormatFloat(t.CPUQuota, 'g', -1, 64) + " cores per server once seeded"
	}
	ens := fmt.Sprintf("%d ZooKeeper servers, tickTime %d ms, initLimit %d, syncLimit %d", t.Servers, t.TickMS, t.InitLimit, t.SyncLimit)
	if t.Observers > 0 {
		ens = fmt.Sprintf("%d ZooKeeper servers and %d observers, tickTime %d ms, initLimit %d, syncLimit %d", t.Servers, t.Observers, t.TickMS, t.InitLimit, t.SyncLimit)
	}
	return []lab.Fact{
		{Name: "Ensemble", Value: ens},
		{Name: "Server CPU", Value: cpu},
	}
}

// System is ZooKeeper.
type System struct{}

func (System) Name() string { return Name }

// ListsClientConnections: each server lists its client connections (cons).
func (System) ListsClientConnections() string { return "the four-letter word cons" }

func (System) NewTopology() lab.Settings {
	return &Topology{Servers: 3, TickMS: 2000, InitLimit: 10, SyncLimit: 5, HeapMB: 256}
}

func (System) Roles() []string {
	return []string{lab.RoleLeader, lab.RoleFollower, lab.RoleObserver}
}

func (System) SampleEvery() time.Duration { return 100 * time.Millisecond }

// Prepare installs Debian's ZooKeeper where programs of this machine run
// (local processes); images are the placement's.
func (System) Prepare(ctx context.Context, p lab.Placement, log *slog.Logger) error {
	if !lab.RunsHostCommands(p) {
		return nil
	}
	if err := EnsureInstalled(ctx, log); err != nil {
		return err
	}
	if v, err := javaVersion(ctx); err == nil {
		lab.RecordVersion(p, "java", v)
	}
	return nil
}

// Probe is a member as it runs on any placement: the generic faults act
// on it through its placement; replace's gates and raise-init-limit
// through ZooKeeper's protocol.
func (System) Probe(string) (lab.Member, error) { return &member{Member: &servers.Member{}}, nil }

// Progress: the most requests outstanding at any server that answered.
func (System) Progress(round []lab.MemberSample) []slog.Attr {
	most, seen := 0.0, false
	for _, m := range round {
		if v, ok := m.Values["server.outstanding_requests"]; ok && m.OK {
			most, seen = max(most, v), true
		}
	}
	if !seen {
		return nil
	}
	return []slog.Attr{slog.Int("outstanding", int(most))}
}

func (System) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: "server.outstanding_requests", Title: "Outstanding requests at each server (mntr)", Unit: "requests"},
		{Name: "server.avg_latency_ms", Title: "Average request latency at each server (ms)", Unit: "ms"},
		{Name: "server.connections", Title: "Alive client connections per server", Unit: "connections"},
		{Name: SeriesRequests, Title: "Packets each server received from its clients, requests and pings (cumulative, mntr zk_packets_received)", Unit: "packets"},
		{Name: SeriesNotSynced, Title: `Leader shutdowns "Not sufficient followers synced" in the servers' logs, since the ensemble was healthy`, Unit: "shutdowns"},
		{Name: SeriesElections, Title: "Leaders elected (LEADING in the servers' logs) since the ensemble was healthy", Unit: "elections"},
	}
}

// SeriesRequests is what each server received from its clients,
// cumulative: jump(server.requests)@from-fault is the jump after a
// trigger.
const SeriesRequests = lab.SeriesServerRequests

func (System) Metrics() []lab.MetricDef {
	return []lab.MetricDef{
		{Name: "servers.outstanding_requests.max", Unit: "requests", Doc: "peak of zk_outstanding_requests over every server and sample (mntr)",
			Reducer: &lab.Reducer{Series: "server.outstanding_requests", Reduce: "max"}},
		{Name: "servers.outstanding_requests.max_from_fault", Unit: "requests", Doc: "peak of zk_outstanding_requests over every server from the start of the first fault to the end of the run",
			Reducer: &lab.Reducer{Series: "server.outstanding_requests", Reduce: "max", Window: "from-fault"}},
		{Name: "servers.avg_latency_ms.max", Unit: "ms", Doc: "peak of zk_avg_latency over every server and sample (mntr)",
			Reducer: &lab.Reducer{Series: "server.avg_latency_ms", Reduce: "max"}},
		{Name: "ensemble.not_synced_shutdowns.total", Unit: "shutdowns", Doc: `leaders that shut down with "Not sufficient followers synced" (fewer than a quorum synced within syncLimit), from the servers' logs, after the ensemble was first healthy`,
			Reducer: &lab.Reducer{Series: SeriesNotSynced, Reduce: "last"}},
		{Name: "ensemble.elections.total", Unit: "elections", Doc: "leaders elected after the ensemble was first healthy, from the servers' logs",
			Reducer: &lab.Reducer{Series: SeriesElections, Reduce: "last"}},
	}
}

// sample reads one member's mntr with a deadline (a paused server does not
// answer: a gap, not a figure).
func sample(ctx context.Context, m *member, clock func(time.Time) float64) lab.MemberSample {
	at := time.Now()
	s := lab.MemberSample{T: clock(at), Member: m.Name()}
	if !m.Running() || m.Paused() {
		return s
	}
	mctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	kv, err := m.Mntr(mctx)
	cancel()
	if err != nil {
		return s
	}
	s.OK, s.Role = true, kv["zk_server_state"]
	s.Values = map[string]float64{
		"server.outstanding_requests": num(kv["zk_outstanding_requests"]),
		"server.avg_latency_ms":       num(kv["zk_avg_latency"]),
		"server.connections":          num(kv["zk_num_alive_connections"]),
		SeriesRequests:                num(kv["zk_packets_received"]),
	}
	return s
}

func num(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return v
}

// cleanVersion drops the placeholder Debian's build leaves in zk_version.
func cleanVersion(v string) string { return strings.TrimSuffix(v, "-${mvngit.commit.id}") }
