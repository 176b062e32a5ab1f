// Package scenarios holds chaoslab's scenario format: a scenario is data
// (topology x workload x fault timeline x variants x hypotheses) named after
// the incident it replays. The YAML definitions live next to this file and
// are embedded into the binary; Load reads any file from disk.
package scenarios

import (
	"fmt"
	"math"

	"github.com/chaoslab/chaoslab/harness/lab"
	"gopkg.in/yaml.v3"
)

// Scenario is one executable replay of a source incident.
type Scenario struct {
	// ID names the scenario after its source, e.g. il-0587-zk-treecache-reconnect-storm.
	ID string `yaml:"id" json:"id" jsonschema:"required,pattern=^[a-z0-9][a-z0-9-]*$"`
	// Title is one line for listings.
	Title string `yaml:"title" json:"title" jsonschema:"required"`
	// Case is the id of the case record in seeds/ (e.g. IL-0587).
	Case string `yaml:"case" json:"case" jsonschema:"required"`
	// System is the coordination service the scenario runs against.
	System string `yaml:"system" json:"system" jsonschema:"required,enum=zookeeper,enum=etcd,enum=consul"`
	// Description says what is replayed and how, in a few sentences.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Topology sizes the servers.
	Topology Topology `yaml:"topology" json:"topology" jsonschema:"required"`
	// Workload is the client workload common to every variant.
	Workload Workload `yaml:"workload" json:"workload" jsonschema:"required"`
	// Timeline is the incident's fault timeline.
	Timeline Timeline `yaml:"timeline" json:"timeline" jsonschema:"required"`
	// Variants maps a variant name (vulnerable, mitigated) to what it changes.
	Variants map[string]Variant `yaml:"variants" json:"variants" jsonschema:"required"`
	// Hypotheses are the properties that should hold; a variant that
	// violates any of them is "violated".
	Hypotheses []Hypothesis `yaml:"hypotheses" json:"hypotheses" jsonschema:"required,minItems=1"`
	// Comparisons relate the same measurement across two variants.
	Comparisons []Comparison `yaml:"comparisons,omitempty" json:"comparisons,omitempty"`
	// Expect gives the verdict each variant must reach for the scenario to
	// reproduce its incident (usually vulnerable: violated, mitigated: held).
	Expect map[string]string `yaml:"expect" json:"expect" jsonschema:"required"`
	// Evidence maps what the incident write-up says to what is measured.
	Evidence []Evidence `yaml:"evidence,omitempty" json:"evidence,omitempty"`

	// Source is the file the scenario was loaded from (not part of the format).
	Source string `yaml:"-" json:"source,omitempty"`
}

// Topology sizes the servers of the system under test.
type Topology struct {
	// ZooKeeper is the ensemble of a zookeeper scenario (required for it).
	ZooKeeper *ZooKeeperTopology `yaml:"zookeeper,omitempty" json:"zookeeper,omitempty"`
	// Etcd is the etcd cluster of an etcd scenario (required for it).
	Etcd *EtcdTopology `yaml:"etcd,omitempty" json:"etcd,omitempty"`
}

// EtcdTopology is an etcd cluster.
type EtcdTopology struct {
	// Members is the number of etcd members, 1 to 7.
	Members int `yaml:"members" json:"members" jsonschema:"required,minimum=1,maximum=7"`
}

// ZooKeeperTopology is a ZooKeeper ensemble and its zoo.cfg settings.
type ZooKeeperTopology struct {
	// Servers is the number of ensemble members, 1 to 7.
	Servers int `yaml:"servers" json:"servers" jsonschema:"required,minimum=1,maximum=7"`
	// TickMS is zoo.cfg's tickTime in milliseconds (default 2000).
	TickMS int `yaml:"tick_ms,omitempty" json:"tick_ms,omitempty" jsonschema:"minimum=100"`
	// InitLimit is zoo.cfg's initLimit, in ticks (default 10).
	InitLimit int `yaml:"init_limit,omitempty" json:"init_limit,omitempty" jsonschema:"minimum=1"`
	// SyncLimit is zoo.cfg's syncLimit, in ticks (default 5).
	SyncLimit int `yaml:"sync_limit,omitempty" json:"sync_limit,omitempty" jsonschema:"minimum=1"`
	// HeapMB is the JVM -Xmx of each server, in MiB (default 256).
	HeapMB int `yaml:"heap_mb,omitempty" json:"heap_mb,omitempty" jsonschema:"minimum=32"`
	// Image is the container image of the servers on the docker backend
	// (default: the official image, else the local equivalent).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// CPUQuota holds each server to this many cores (cgroup cpu quota; 0 =
	// no limit). It keeps the ratio of client demand to server capacity of a
	// fleet of hundreds of clients when a dozen stand in for them.
	CPUQuota float64 `yaml:"cpu_quota,omitempty" json:"cpu_quota,omitempty" jsonschema:"minimum=0"`
	// MaxClientCnxns is zoo.cfg's per-IP connection limit (0 = unlimited).
	MaxClientCnxns int `yaml:"max_client_cnxns,omitempty" json:"max_client_cnxns,omitempty" jsonschema:"minimum=0"`
}

// Workload is the client side of a scenario. Variants override fields of it.
type Workload struct {
	// Kind selects the workload program: zk-tree-mirror (IL-0587's proxies)
	// or kinesis-frontend (IL-0384's front-end fleet, see Fleet).
	Kind string `yaml:"kind" json:"kind" jsonschema:"required,enum=zk-tree-mirror,enum=kinesis-frontend"`
	// Clients is the number of client processes (zk-tree-mirror), or the
	// requests the load generator keeps in flight at most (kinesis-frontend).
	Clients int `yaml:"clients" json:"clients" jsonschema:"required,minimum=1"`
	// StartSpread spreads the clients' starts evenly over this span of the
	// warm-up, as a fleet comes up one instance at a time.
	StartSpread Duration `yaml:"start_spread,omitempty" json:"start_spread,omitempty"`
	// Strategy is how a client (re)loads its mirror: full-refresh or paced.
	Strategy string `yaml:"strategy,omitempty" json:"strategy,omitempty" jsonschema:"enum=full-refresh,enum=paced"`
	// Window bounds requests in flight per client (paced only).
	Window int `yaml:"window,omitempty" json:"window,omitempty" jsonschema:"minimum=1"`
	// Retries is how many times a failed read is re-queued (full-refresh
	// re-queues like Curator's background retry; paced retries after the
	// session is back).
	Retries int `yaml:"retries,omitempty" json:"retries,omitempty" jsonschema:"minimum=0"`
	// Tree is the subtree the harness seeds and every client mirrors.
	Tree Tree `yaml:"tree,omitempty" json:"tree,omitzero"`
	// SessionTimeout is the ZooKeeper session timeout the clients ask for.
	SessionTimeout Duration `yaml:"session_timeout,omitempty" json:"session_timeout,omitempty"`
	// MemoryLimitMB is the kernel-enforced memory limit of each client (0 = none).
	MemoryLimitMB int `yaml:"memory_limit_mb,omitempty" json:"memory_limit_mb,omitempty" jsonschema:"minimum=0"`
	// Restart restarts a client that died, after RestartDelay, like a
	// supervisor (Kubernetes) would.
	Restart bool `yaml:"restart,omitempty" json:"restart,omitempty"`
	// RestartDelay is how long a dead client stays down before it is restarted.
	RestartDelay Duration `yaml:"restart_delay,omitempty" json:"restart_delay,omitempty"`
	// Writer changes znodes at a steady rate so that staleness is measurable.
	Writer Writer `yaml:"writer,omitempty" json:"writer,omitzero"`
	// ReportInterval is how often each client reports its figures.
	ReportInterval Duration `yaml:"report_interval,omitempty" json:"report_interval,omitempty"`
	// FreshWithin is the staleness under which a mirror counts as fresh.
	FreshWithin Duration `yaml:"fresh_within,omitempty" json:"fresh_within,omitempty"`
	// Fleet is the front-end fleet of a kinesis-frontend workload.
	Fleet Fleet `yaml:"fleet,omitempty" json:"fleet,omitzero"`
}

// Fleet is IL-0384's front-end fleet: servers that register in etcd, read
// the shard table from it, keep a connection (and, per-peer, an OS thread)
// to every peer of their cell, and route only with a complete shard-map.
type Fleet struct {
	// Servers is the fleet's size before capacity is added.
	Servers int `yaml:"servers" json:"servers" jsonschema:"required,minimum=2"`
	// AddFraction is the capacity the add-capacity fault adds, as a
	// fraction of Servers (rounded up): 0.1 adds 10%.
	AddFraction float64 `yaml:"add_fraction" json:"add_fraction" jsonschema:"required,exclusiveMinimum=0"`
	// ThreadLimit is each server's OS thread limit: the pids.max of its
	// cgroup (--pids-limit of its container).
	ThreadLimit int `yaml:"thread_limit" json:"thread_limit" jsonschema:"required,minimum=8"`
	// CPUQuota holds each server to this many cores (0 = no limit).
	CPUQuota float64 `yaml:"cpu_quota,omitempty" json:"cpu_quota,omitempty" jsonschema:"minimum=0"`
	// PeerThreads is per-peer (one OS thread for every peer: the incident)
	// or pool (PoolThreads threads whatever the fleet's size).
	PeerThreads string `yaml:"peer_threads" json:"peer_threads" jsonschema:"required,enum=per-peer,enum=pool"`
	// PoolThreads sizes the pool (pool only).
	PoolThreads int `yaml:"pool_threads,omitempty" json:"pool_threads,omitempty" jsonschema:"minimum=1"`
	// CellSize splits the fleet into cells of this many servers; a server
	// peers only inside its cell (0 = one cell: the incident).
	CellSize int `yaml:"cell_size,omitempty" json:"cell_size,omitempty" jsonschema:"minimum=0"`
	// Bootstrap is where a starting server gets the shard table: peers
	// (every peer sends its full shard-map: the incident) or store (etcd,
	// the action item; peers then send digests only).
	Bootstrap string `yaml:"bootstrap" json:"bootstrap" jsonschema:"required,enum=peers,enum=store"`
	// BootstrapTimeout: with bootstrap peers, how long a server waits for a
	// peer's shard-map before it reads the store (a fleet's first server
	// has no peer to ask).
	BootstrapTimeout Duration `yaml:"bootstrap_timeout,omitempty" json:"bootstrap_timeout,omitempty"`
	// LearnSpread: a running server learns of a new member after a random
	// delay up to this (the incident: up to an hour; scaled down).
	LearnSpread Duration `yaml:"learn_spread,omitempty" json:"learn_spread,omitempty"`
	// Heartbeat is the interval of peer messages (default 1s).
	Heartbeat Duration `yaml:"heartbeat,omitempty" json:"heartbeat,omitempty"`
	// LeaseTTL is the membership lease in etcd (default 3s).
	LeaseTTL Duration `yaml:"lease_ttl,omitempty" json:"lease_ttl,omitempty"`
	// Shards is the size of the shard table in etcd.
	Shards int `yaml:"shards" json:"shards" jsonschema:"required,minimum=1"`
	// BackendCells is the number of back-end cells owning the shards.
	BackendCells int `yaml:"backend_cells,omitempty" json:"backend_cells,omitempty" jsonschema:"minimum=1"`
	// RequestRate is the load generator's routing requests per second over
	// the whole fleet.
	RequestRate float64 `yaml:"request_rate" json:"request_rate" jsonschema:"required,exclusiveMinimum=0"`
	// RestartRate is the operator's restart pace in servers per second
	// (restart-fleet); 0 restarts every server at once.
	RestartRate float64 `yaml:"restart_rate" json:"restart_rate" jsonschema:"minimum=0"`
	// HealthGrace is how long a started server may take to complete its
	// shard-map before the health check counts it as failing.
	HealthGrace Duration `yaml:"health_grace,omitempty" json:"health_grace,omitempty"`
	// HealthTimeout bounds each health check (default 1s).
	HealthTimeout Duration `yaml:"health_timeout,omitempty" json:"health_timeout,omitempty"`
	// HealthFailures in a row remove a server from the fleet (default 3).
	HealthFailures int `yaml:"health_failures,omitempty" json:"health_failures,omitempty" jsonschema:"minimum=1"`
	// GoMaxProcs is each server's GOMAXPROCS (0 = Go's default).
	GoMaxProcs int `yaml:"gomaxprocs,omitempty" json:"gomaxprocs,omitempty" jsonschema:"minimum=0"`
}

// Added is the number of servers the capacity addition adds.
func (f Fleet) Added() int {
	return max(int(math.Ceil(float64(f.Servers)*f.AddFraction)), 1)
}

// Tree describes the seeded subtree: Fanout[i] children at depth i+1.
type Tree struct {
	// Path is the absolute znode path of the subtree's root.
	Path string `yaml:"path" json:"path" jsonschema:"required,pattern=^/"`
	// Fanout gives the children per node at each depth: [30, 200] is 30
	// children of the root with 200 children each.
	Fanout []int `yaml:"fanout" json:"fanout" jsonschema:"required,minItems=1"`
	// DataBytes is the size of each znode's data, in bytes.
	DataBytes int `yaml:"data_bytes" json:"data_bytes" jsonschema:"minimum=0"`
}

// Nodes is the number of znodes below (not counting) Path.
func (t Tree) Nodes() int {
	n, level := 0, 1
	for _, f := range t.Fanout {
		level *= f
		n += level
	}
	return n
}

// Writer is the background writer.
type Writer struct {
	// RatePerSec is the number of znode updates per second.
	RatePerSec float64 `yaml:"rate_per_sec" json:"rate_per_sec" jsonschema:"minimum=0"`
	// Share is the fraction of leaf znodes that receive updates (round robin).
	Share float64 `yaml:"share" json:"share" jsonschema:"minimum=0,maximum=1"`
}

// Timeline is the fault timeline of a variant run.
type Timeline struct {
	// Warmup runs the workload before the first fault.
	Warmup Duration `yaml:"warmup" json:"warmup" jsonschema:"required"`
	// Faults, by offset from the end of the warm-up.
	Faults []FaultStep `yaml:"faults" json:"faults" jsonschema:"required,minItems=1"`
	// Observe keeps measuring after the last fault ends.
	Observe Duration `yaml:"observe" json:"observe" jsonschema:"required"`
}

// FaultStep is one fault injection.
type FaultStep struct {
	// At is the offset from the end of the warm-up.
	At Duration `yaml:"at" json:"at"`
	// Fault is a registered fault name (pause, kill-restart).
	Fault string `yaml:"fault" json:"fault" jsonschema:"required"`
	// Target is a role: leader, follower or any; fleet for the faults that
	// act on a whole front-end fleet (add-capacity, restart-fleet).
	Target string `yaml:"target" json:"target" jsonschema:"required,enum=leader,enum=follower,enum=any,enum=fleet"`
	// Duration is how long the fault lasts.
	Duration Duration `yaml:"duration" json:"duration" jsonschema:"required"`
}

// Variant is a named change to the workload (and later, topology).
type Variant struct {
	// Description says what the variant stands for (the client as the
	// incident ran it, or its fix).
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Workload fields set here override the scenario's workload.
	Workload yaml.Node `yaml:"workload,omitempty" json:"-"`
}

// Hypothesis is a property that should hold in a run.
type Hypothesis struct {
	// ID names the hypothesis in reports.
	ID string `yaml:"id" json:"id" jsonschema:"required"`
	// Description states the property in a sentence.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Metric is the measurement it is about.
	Metric string `yaml:"metric" json:"metric" jsonschema:"required"`
	// Op compares the measured value with Threshold: <, <=, >, >= or ==.
	Op string `yaml:"op" json:"op" jsonschema:"required,enum=<,enum=<=,enum=>,enum=>=,enum=="`
	// Threshold is the bound, in the metric's unit.
	Threshold float64 `yaml:"threshold" json:"threshold"`
}

// Comparison checks Metric(Numerator)/Metric(Denominator) Op Threshold.
type Comparison struct {
	// ID names the comparison in reports.
	ID string `yaml:"id" json:"id" jsonschema:"required"`
	// Description states the relation in a sentence.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Metric is the measurement compared.
	Metric string `yaml:"metric" json:"metric" jsonschema:"required"`
	// Numerator is the variant whose value is divided.
	Numerator string `yaml:"numerator" json:"numerator" jsonschema:"required"`
	// Denominator is the variant whose value divides.
	Denominator string `yaml:"denominator" json:"denominator" jsonschema:"required"`
	// Op compares the ratio with Threshold: <, <=, >, >= or ==.
	Op string `yaml:"op" json:"op" jsonschema:"required,enum=<,enum=<=,enum=>,enum=>=,enum=="`
	// Threshold is the bound of the ratio.
	Threshold float64 `yaml:"threshold" json:"threshold"`
}

// Evidence maps a statement of the write-up to a measured metric.
type Evidence struct {
	// Incident is the statement of the write-up, paraphrased.
	Incident string `yaml:"incident" json:"incident" jsonschema:"required"`
	// Metric is the measurement that shows it in a run.
	Metric string `yaml:"metric" json:"metric" jsonschema:"required"`
}

// Duration is a time.Duration written as "10s", "1m30s" (lab.Duration).
type Duration = lab.Duration

// ServersNames lists the member names the harness gives the servers (zk1..zkN).
func (z *ZooKeeperTopology) ServersNames() []string {
	var out []string
	for i := 1; i <= z.Servers; i++ {
		out = append(out, fmt.Sprintf("zk%d", i))
	}
	return out
}
