// Package dblb is IL-0206's workload kind, rails-db-lb: a real PostgreSQL
// primary and streaming replicas (harness/kinds/dblb/pgcluster), the replicas
// registered in Consul with a lag-aware check (harness/kinds/dblb/pgconsul), and one
// app pod per Consul client agent whose processes do what GitLab's Rails
// database load balancer did (lib/gitlab/database/load_balancing/
// service_discovery.rb): look the replicas up by DNS at their own pod's
// agent on a schedule, keep a host list, send reads to a listed replica or
// to the primary when the list is empty, and writes to the primary. See
// README.md.
package dblb

import (
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// KindName is the workload kind.
const KindName = "rails-db-lb"

// The discovery codes.
const (
	// Discovery2022: a lookup that gets no reply keeps the list; a reply
	// with no usable host (empty, NXDOMAIN, SERVFAIL) replaces it with an
	// empty list; no retry before the next period.
	Discovery2022 = "2022"
	// DiscoveryLater: a reply with no host is an error too (the later
	// EmptyDnsResponse): the list is kept, and a failed lookup is retried
	// up to 3 times after 0.1-0.2 s.
	DiscoveryLater = "later"
)

// The pods' DNS paths.
const (
	ResolverForwarder = "forwarder"
	ResolverDirect    = "direct"
)

// Bounds of the settings.
const (
	// MaxProcesses is the most app processes a pod runs (each one a
	// discovery loop and connection pools of its own).
	MaxProcesses = 16
	// MaxRate is the most requests a second one process sends.
	MaxRate = 500
	// laterRetries and the retry delay are the later code's
	// (MAX_DISCOVERY_RETRIES, RETRY_DELAY_RANGE 0.1..0.2 s).
	laterRetries  = 3
	retryDelayMin = 100 * time.Millisecond
	retryDelayMax = 200 * time.Millisecond
)

func init() { lab.RegisterKind(kind{}) }

// Settings are a rails-db-lb workload's, each declared once here with its
// default in NewSettings.
type Settings struct {
	// Processes is how many app processes each pod runs (Puma workers),
	// each with its own discovery loop and pools. There is one pod per
	// Consul client agent.
	Processes int `yaml:"processes" json:"processes"`
	// Discovery is the load balancer's service discovery code: "2022" or
	// "later".
	Discovery string `yaml:"discovery" json:"discovery"`
	// Interval is the least time between lookups (GitLab's 60 s, scaled
	// 1/20); the next lookup is after max(interval, TTL) + rand(0..jitter).
	Interval lab.Duration `yaml:"interval" json:"interval"`
	// Jitter is the random part of the wait (GitLab's 0..10 s, scaled 1/20).
	Jitter lab.Duration `yaml:"jitter" json:"jitter"`
	// Resolver is the pod's DNS path to its agent: "forwarder" (a local
	// forwarder, as a cluster DNS or a dnsmasq stub forwards the consul
	// domain, that answers SERVFAIL when the agent does not answer) or
	// "direct" (the agent's own port: a dead agent refuses, which the
	// resolver raises as an error).
	Resolver string `yaml:"resolver" json:"resolver"`
	// LookupTimeout bounds one DNS lookup (over TCP, at the pod's agent).
	LookupTimeout lab.Duration `yaml:"lookup_timeout" json:"lookup_timeout"`
	// ReadRate and WriteRate are each process's reads and writes a second
	// (open loop: users keep coming whatever the database does).
	ReadRate  float64 `yaml:"read_rate" json:"read_rate"`
	WriteRate float64 `yaml:"write_rate" json:"write_rate"`
	// ReadRows is how many rows one read aggregates (its cost).
	ReadRows int `yaml:"read_rows" json:"read_rows"`
	// PoolSize is each process's connections to one database server.
	PoolSize int `yaml:"pool_size" json:"pool_size"`
	// QueryTimeout bounds one query, waiting for a connection included: a
	// query past it is an app error.
	QueryTimeout lab.Duration `yaml:"query_timeout" json:"query_timeout"`
	// PrimaryCPU holds the primary (postmaster and backends) to this many
	// cores (cgroup quota), so that its capacity is reachable.
	PrimaryCPU float64 `yaml:"primary_cpu" json:"primary_cpu"`
	// Replicas is the number of streaming replicas.
	Replicas int `yaml:"replicas" json:"replicas"`
	// MaxConnections is every server's max_connections.
	MaxConnections int `yaml:"max_connections" json:"max_connections"`
	// Rows is the size of the table reads aggregate over.
	Rows int `yaml:"rows" json:"rows"`
	// Program, when set, is a user's app pod run in place of chaoslab's
	// own, one per client agent (the discovery, pool and timeout settings
	// above then only describe the built-in one; the rates are what each
	// pod is asked for): see Contract and docs/bring-your-own-client.md.
	Program *lab.ClientProgram `yaml:"program,omitempty" json:"program,omitempty"`
}

// NewSettings are the defaults.
func NewSettings() *Settings {
	return &Settings{
		Processes: 4, Discovery: Discovery2022,
		Interval: lab.Duration(3 * time.Second), Jitter: lab.Duration(500 * time.Millisecond),
		Resolver: ResolverForwarder, LookupTimeout: lab.Duration(time.Second),
		ReadRate: 10, WriteRate: 1, ReadRows: 2000, PoolSize: 4,
		QueryTimeout: lab.Duration(2 * time.Second), PrimaryCPU: 0.2, Replicas: 2,
		MaxConnections: 80, Rows: 100000,
	}
}

// Check validates the settings.
func (s *Settings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(s.Processes >= 1 && s.Processes <= MaxProcesses, "processes", "want 1 to %d, got %d", MaxProcesses, s.Processes)
	c.Need(s.Discovery == Discovery2022 || s.Discovery == DiscoveryLater, "discovery", "want %q or %q, got %q", Discovery2022, DiscoveryLater, s.Discovery)
	c.Need(s.Resolver == ResolverForwarder || s.Resolver == ResolverDirect, "resolver", "want %q or %q, got %q", ResolverForwarder, ResolverDirect, s.Resolver)
	c.Msg("interval", lab.CheckDuration(s.Interval, 100*time.Millisecond, "the least time between two lookups of one process"))
	c.Msg("jitter", lab.CheckDuration(s.Jitter, 0, ""))
	c.Msg("lookup_timeout", lab.CheckDuration(s.LookupTimeout, 10*time.Millisecond, "the least time a TCP DNS lookup takes"))
	c.Msg("query_timeout", lab.CheckDuration(s.QueryTimeout, 10*time.Millisecond, "the least time a query takes"))
	c.Need(s.ReadRate > 0 && s.ReadRate <= MaxRate, "read_rate", "want more than 0 and at most %d, got %g", MaxRate, s.ReadRate)
	c.Need(s.WriteRate >= 0 && s.WriteRate <= MaxRate, "write_rate", "want 0 to %d, got %g", MaxRate, s.WriteRate)
	c.Need(s.ReadRows >= 1 && s.ReadRows <= s.Rows, "read_rows", "want 1 to rows (%d), got %d", s.Rows, s.ReadRows)
	c.Need(s.Rows >= 1 && s.Rows <= 10_000_000, "rows", "want 1 to 10000000, got %d", s.Rows)
	c.Need(s.PoolSize >= 1 && s.PoolSize <= 64, "pool_size", "want 1 to 64, got %d", s.PoolSize)
	c.Msg("primary_cpu", lab.CheckCPUs(s.PrimaryCPU, true))
	c.Need(s.Replicas >= 1 && s.Replicas <= 8, "replicas", "want 1 to 8, got %d", s.Replicas)
	c.Need(s.MaxConnections >= 10 && s.MaxConnections <= 10000, "max_connections", "want 10 to 10000, got %d", s.MaxConnections)
	if s.Program != nil {
		c = append(c, lab.Under("program", s.Program.Check())...)
		c.Need(s.Resolver == ResolverForwarder, "resolver", "a user's app pod asks its pod's forwarder, which counts its lookups: want %q", ResolverForwarder)
	}
	return c
}

// Facts describe the workload in a report.
func (s *Settings) Facts() []lab.Fact {
	disc := "2022: a reply with no host empties the list; no reply keeps it; no retry"
	if s.Discovery == DiscoveryLater {
		disc = "later: a reply with no host or no reply keeps the list; up to 3 retries after 0.1-0.2 s"
	}
	facts := []lab.Fact{
		{Name: "Kind", Value: KindName},
		{Name: "App pods", Value: "one per Consul client agent; program: " + s.program()},
	}
	if s.Program != nil {
		return append(facts,
			lab.Fact{Name: "Load asked", Value: fmt.Sprintf("%g reads/s and %g writes/s per pod", s.ReadRate*float64(s.Processes), s.WriteRate*float64(s.Processes))},
			lab.Fact{Name: "Measured at", Value: "each replica's statement log (the pod's role), each pod's proxy to the primary, each pod's DNS forwarder; judged: the reads asked that no replica got"},
			s.pgFact())
	}
	return append(facts,
		lab.Fact{Name: "Discovery", Value: fmt.Sprintf("replica.patroni.service.consul SRV over TCP at the pod's agent every %s + rand(0..%s) (GitLab's 60 s + 0..10 s, scaled 1/20); %s", s.Interval, s.Jitter, disc)},
		lab.Fact{Name: "DNS path", Value: map[string]string{ResolverForwarder: "a forwarder per pod in front of its agent (SERVFAIL when the agent does not answer)", ResolverDirect: "the agent's own DNS port (a dead agent refuses)"}[s.Resolver]},
		lab.Fact{Name: "Load", Value: fmt.Sprintf("%g reads/s and %g writes/s per process (open loop), queries time out after %s", s.ReadRate, s.WriteRate, s.QueryTimeout)},
		s.pgFact())
}

func (s *Settings) pgFact() lab.Fact {
	return lab.Fact{Name: "PostgreSQL", Value: fmt.Sprintf("15, a primary held to %g cores and %d streaming replicas, max_connections %d, %d rows, a read aggregates %d", s.PrimaryCPU, s.Replicas, s.MaxConnections, s.Rows, s.ReadRows)}
}

// kind is rails-db-lb.
type kind struct{}

func (kind) Name() string              { return KindName }
func (kind) Systems() []string         { return []string{"consul"} }
func (kind) NewSettings() lab.Settings { return NewSettings() }
func (kind) Groups() []string          { return nil }
func (kind) Probe(string) lab.Target   { return nil }
func (kind) Noun() (string, string)    { return "app pod", "app pods" }

// PreferPlacement: local processes unless the run asks for containers
// (--placement docker: PostgreSQL and the agents in containers).
func (kind) PreferPlacement() (string, string) {
	return "local", "PostgreSQL and the agents' memory cgroups on this machine (--placement docker puts them in containers)"
}

// ImagePostgres names the servers' image on the docker placement (--image
// postgresql=REF, CHAOSLAB_POSTGRESQL_IMAGE).
const ImagePostgres = pgcluster.ImageName

// Images: PostgreSQL's on the docker placement.
func (s *Settings) Images() []lab.ImageNeed {
	need := []lab.ImageNeed{{Name: ImagePostgres, Defaults: pgcluster.ImageCandidates()}}
	if s.Program != nil && s.Program.Image != "" {
		need = append(need, lab.ImageNeed{Name: "user-pod", Ref: s.Program.Image, Defaults: []string{s.Program.Image}})
	}
	return need
}

// Series names.
const (
	SeriesPrimaryShare = "app.primary_read_share"
	SeriesReads        = "app.reads_per_s"
	SeriesReadP50      = "app.read_p50_ms"
	SeriesReadP99      = "app.read_p99_ms"
	SeriesErrorRate    = "app.error_rate"
	SeriesNoReplicas   = "app.processes_without_replicas"
	SeriesLookups      = "pod.lookups"
	SeriesActive       = "primary.active_connections"
	SeriesSaturation   = "primary.connection_saturation"
	SeriesCPU          = "db.cpu_cores"
	SeriesXacts        = "db.xacts_per_s"
)

func (kind) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: SeriesPrimaryShare, Title: "Share of the app's reads sent to the primary, per second (the real cause's effect: agents OOM-killed are crossed)", Unit: "share", Marks: []string{"oom-kill"}},
		{Name: SeriesNoReplicas, Title: "App processes with no replica in their host list (reads all go to the primary)", Unit: "processes", Marks: []string{"oom-kill"}},
		{Name: SeriesAgentMemory, Title: "Memory each pod's Consul agent is charged against its limit (MiB, its cgroup): what the kernel OOM-kills on, kills crossed", Unit: "MiB", Marks: []string{"oom-kill"}},
		{Name: SeriesAgentRSS, Title: "Each pod's Consul agent's resident set (MiB, /proc): the pages it maps, not what the limit counts", Unit: "MiB"},
		{Name: SeriesSaturation, Title: "The misleading signal: the primary's client connections against max_connections (pg_stat_activity), agents OOM-killed crossed", Unit: "share", Marks: []string{"oom-kill"}},
		{Name: SeriesActive, Title: "Connections running a query at the primary (pg_stat_activity, state active)", Unit: "connections"},
		{Name: SeriesReads, Title: "Reads a second by where they went (primary, replicas)", Unit: "reads/s"},
		{Name: SeriesReadP50, Title: "Read latency at the app, median per second (ms)", Unit: "ms"},
		{Name: SeriesReadP99, Title: "Read latency at the app, 99th percentile per second (ms)", Unit: "ms"},
		{Name: SeriesErrorRate, Title: "App queries that failed (timed out, refused), share per second", Unit: "share"},
		{Name: SeriesLookups, Title: "Replica lookups per pod by outcome (answered, empty, failed), cumulative", Unit: "lookups"},
		{Name: SeriesCPU, Title: "CPU of each PostgreSQL server (postmaster and backends, /proc), against the primary's share", Unit: "cores"},
		{Name: SeriesXacts, Title: "Transactions a second per PostgreSQL server (pg_stat_database)", Unit: "xacts/s"},
	}
}

// Metric names.
const (
	MetricPrimaryShare = "app.primary_read_share.during_faults"
	MetricReadP99      = "app.read_p99_ms.during_faults"
	MetricErrorRate    = "app.error_rate.during_faults"
	// MetricAgentMemoryMax is the most memory any agent was charged.
	MetricAgentMemoryMax = "agents.memory_mb.max"
	// MetricReadsSent is, for a user's pods, the reads they sent anywhere
	// over the reads they were asked for, while the faults lasted.
	MetricReadsSent = "app.reads_sent_of_asked.during_faults"
)

func (kind) Metrics() []lab.MetricDef {
	m := func(name, unit, doc string) lab.MetricDef { return lab.MetricDef{Name: name, Unit: unit, Doc: doc} }
	return []lab.MetricDef{
		m(MetricPrimaryShare, "share", "share of the app's reads that went to the primary while the faults lasted"),
		m("app.primary_read_share.before_faults", "share", "share of the app's reads that went to the primary in the 10 s before the first fault"),
		m(MetricReadP99, "ms", "99th percentile of the app's read latency (timed at the app, failures at their timeout) while the faults lasted"),
		m("app.read_p50_ms.during_faults", "ms", "median of the app's read latency while the faults lasted"),
		m("app.read_p99_ms.before_faults", "ms", "99th percentile of the app's read latency in the 10 s before the first fault"),
		m(MetricErrorRate, "share", "share of the app's queries that failed (timed out, refused) while the faults lasted"),
		m("app.processes_without_replicas.max", "processes", "most app processes with an empty host list at once"),
		m("pods.lookups_empty", "lookups", "lookups answered with no host (empty, NXDOMAIN, SERVFAIL), all pods"),
		m("pods.lookups_failed", "lookups", "lookups with no answer (refused, reset, timed out), all pods"),
		m("pods.lookups_answered", "lookups", "lookups answered with at least one replica, all pods"),
		{Name: "primary.connection_saturation.max", Unit: "share", Doc: "the misleading signal: most client connections at the primary over max_connections",
			Reducer: &lab.Reducer{Series: SeriesSaturation, Reduce: "max", Window: "during-faults"}},
		{Name: "primary.active_connections.max", Unit: "connections", Doc: "most connections running a query at the primary while the faults lasted",
			Reducer: &lab.Reducer{Series: SeriesActive, Reduce: "max", Window: "during-faults"}},
		m(MetricReadsSent, "share", "a user's app pods only: the reads they sent (counted at the primary's proxies and the replicas' logs) over the reads they were asked for, while the faults lasted"),
		m(MetricAgentMemoryMax, "MiB", "most memory any pod's Consul agent was charged (its cgroup, sampled each second): what its limit counts"),
		m("primary.cpu_cores.during_faults", "cores", "the primary's mean CPU while the faults lasted"),
		m("replicas.cpu_cores.during_faults", "cores", "the replicas' mean CPU (summed) while the faults lasted"),
	}
}
