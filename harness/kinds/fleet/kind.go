package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// KindName is the workload kind: IL-0384's front-end fleet on etcd.
const KindName = "kinesis-frontend"

// AgentName is the front-end server's agent program.
const AgentName = "kinesis-frontend"

func init() {
	lab.RegisterKind(kind{})
	lab.RegisterAgent(lab.Agent{Name: AgentName, Doc: "a front-end server of the IL-0384 fleet: membership and shard table in etcd, peer shard-maps, routing", Run: runAgent})
}

// Settings are a kinesis-frontend workload's, each declared once here
// with its default in NewSettings.
type Settings struct {
	// Servers is the fleet's size before capacity is added.
	Servers int `yaml:"servers" json:"servers"`
	// AddFraction is the capacity the add-capacity fault adds, as a
	// fraction of Servers (rounded up): 0.1 adds 10%.
	AddFraction float64 `yaml:"add_fraction" json:"add_fraction"`
	// ThreadLimit is each server's OS thread limit: the pids.max of its
	// cgroup (--pids-limit of its container).
	ThreadLimit int `yaml:"thread_limit" json:"thread_limit"`
	// CPUQuota holds each server to this many cores (0 = no limit).
	CPUQuota float64 `yaml:"cpu_quota" json:"cpu_quota"`
	// FleetCPU holds the whole fleet to this many cores together (0 = the
	// machine's): a fleet calibrated on a 2-core machine competes for CPU
	// the same way on a bigger one. Local placement (the run's cgroup).
	FleetCPU float64 `yaml:"fleet_cpu" json:"fleet_cpu"`
	// GoMaxProcs is each server's GOMAXPROCS (0 = Go's default).
	GoMaxProcs        int `yaml:"gomaxprocs" json:"gomaxprocs"`
	frontend.Settings `yaml:",inline"`
	// Shards is the size of the shard table in etcd.
	Shards int `yaml:"shards" json:"shards"`
	// BackendCells is the number of back-end cells owning the shards.
	BackendCells int `yaml:"backend_cells" json:"backend_cells"`
	// RequestRate is the load generator's routing requests per second over
	// the whole fleet (round robin, open loop).
	RequestRate float64 `yaml:"request_rate" json:"request_rate"`
	// MaxInFlight bounds the load generator's requests in flight.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight"`
	// StartSpread spreads the fleet's first start.
	StartSpread lab.Duration `yaml:"start_spread" json:"start_spread"`
	// RestartRate is the operator's restart pace in servers per second
	// (restart-fleet); 0 restarts every server at once.
	RestartRate float64 `yaml:"restart_rate" json:"restart_rate"`
	// HealthGrace is how long a started server may take to complete its
	// shard-map before the health check counts it as failing.
	HealthGrace lab.Duration `yaml:"health_grace" json:"health_grace"`
	// HealthTimeout bounds each health check (GET /status).
	HealthTimeout lab.Duration `yaml:"health_timeout" json:"health_timeout"`
	// HealthFailures in a row remove a server from the fleet (it is
	// killed, as a load balancer would drop it, and waits for the
	// operator's restart).
	HealthFailures int `yaml:"health_failures" json:"health_failures"`
	// Program, when set, is a user's front-end server run in place of
	// chaoslab's own (the server settings above then only describe the
	// built-in one): see Contract and docs/bring-your-own-client.md.
	Program *lab.ClientProgram `yaml:"program,omitempty" json:"program,omitempty"`
}

// SetClient runs a user's front-end server in place of the built-in one.
func (s *Settings) SetClient(c *lab.ClientProgram) { s.Program = c }

// NewSettings are the defaults.
func NewSettings() *Settings {
	return &Settings{
		Servers: 8, AddFraction: 0.1, ThreadLimit: 40, Settings: frontend.DefaultSettings(),
		Shards: 1000, BackendCells: 16, RequestRate: 100, MaxInFlight: 32,
		HealthGrace: lab.Duration(15 * time.Second), HealthTimeout: lab.Duration(time.Second), HealthFailures: 3,
	}
}

// Added is the number of servers the capacity addition adds.
func (s *Settings) Added() int {
	return max(int(math.Ceil(float64(s.Servers)*s.AddFraction)), 1)
}

// Bounds of the settings, from what one machine does.
const (
	// MaxServers is the most front-end servers (the added ones besides)
	// one machine runs beside etcd.
	MaxServers = lab.MaxInstances
	// MaxShards is the most shards the harness writes to etcd.
	MaxShards = 200000
	// MaxRequestRate is the load generator's most requests a second: one
	// ticker on one machine, sharing its CPUs with the fleet.
	MaxRequestRate = 10000
	// MaxRestartRate is the most servers restarted a second; faster is
	// all at once (write 0).
	MaxRestartRate = 1000
)

// Check validates the settings.
func (s *Settings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(s.Servers >= 2, "servers", "want at least 2 servers (a fleet has peers), got %d", s.Servers)
	c.Need(s.Servers <= MaxServers, "servers", "%d servers is more than one machine runs here (%d)", s.Servers, MaxServers)
	c.Need(s.AddFraction > 0 && s.AddFraction <= 1, "add_fraction", "want more than 0 and at most 1, got %g", s.AddFraction)
	c.Need(s.ThreadLimit >= 8, "thread_limit", "want at least 8 (the Go runtime needs a few threads of its own), got %d", s.ThreadLimit)
	c.Need(s.ThreadLimit <= 1<<22, "thread_limit", "%d is more than the kernel's pid_max (4194304)", s.ThreadLimit)
	c.Msg("cpu_quota", lab.CheckCPUs(s.CPUQuota, true))
	c.Msg("fleet_cpu", lab.CheckCPUs(s.FleetCPU, true))
	c.Need(s.FleetCPU == 0 || s.CPUQuota > 0 && s.FleetCPU >= s.CPUQuota, "fleet_cpu", "a fleet budget of %g cores needs cpu_quota set and at most the budget (the kernel refuses a budget under one server's quota), got cpu_quota %g", s.FleetCPU, s.CPUQuota)
	c.Need(s.GoMaxProcs >= 0, "gomaxprocs", "want >= 0 (0 is Go's default), got %d", s.GoMaxProcs)
	c.Need(s.GoMaxProcs <= 256, "gomaxprocs", "%d is more than 256 (Go's own limit is the CPUs it can use)", s.GoMaxProcs)
	c = append(c, s.Settings.Check()...)
	c.Need(s.PeerThreads != frontend.Pool || s.PoolThreads < s.ThreadLimit, "pool_threads", "%d threads do not fit under thread_limit %d beside the Go runtime's own", s.PoolThreads, s.ThreadLimit)
	c.Need(s.Shards >= 1 && s.Shards <= MaxShards, "shards", "want 1 to %d, got %d", MaxShards, s.Shards)
	c.Need(s.BackendCells >= 1, "backend_cells", "want at least 1, got %d", s.BackendCells)
	c.Need(s.BackendCells <= max(s.Shards, 1), "backend_cells", "%d cells for %d shards leaves cells without a shard", s.BackendCells, s.Shards)
	c.Need(s.RequestRate > 0, "request_rate", "want > 0, got %g", s.RequestRate)
	c.Need(s.RequestRate <= MaxRequestRate, "request_rate", "%g requests/s is more than %d, what the load generator (one ticker on this machine) sends", s.RequestRate, MaxRequestRate)
	c.Need(s.MaxInFlight >= 1, "max_in_flight", "want at least 1, got %d", s.MaxInFlight)
	c.Need(s.MaxInFlight <= 10000, "max_in_flight", "%d is more than 10000 connections the load generator holds open", s.MaxInFlight)
	c.Msg("start_spread", lab.CheckDuration(s.StartSpread, 0, ""))
	c.Need(s.RestartRate >= 0, "restart_rate", "want >= 0 (0 restarts every server at once), got %g", s.RestartRate)
	c.Need(s.RestartRate <= MaxRestartRate, "restart_rate", "%g servers/s is more than %d: write 0 to restart every server at once", s.RestartRate, MaxRestartRate)
	c.Need(s.HealthFailures >= 1, "health_failures", "want at least 1, got %d", s.HealthFailures)
	c.Msg("health_grace", lab.CheckDuration(s.HealthGrace, 0, ""))
	c.Msg("health_timeout", lab.CheckDuration(s.HealthTimeout, time.Millisecond, "the least time a GET /status can take"))
	if s.Program != nil {
		c = append(c, lab.Under("program", s.Program.Check())...)
	}
	return c
}

// CheckWarmup: the fleet starts over start_spread, within the warm-up.
func (s *Settings) CheckWarmup(warmup time.Duration) []lab.Problem {
	var c lab.Checks
	c.Need(s.StartSpread.D() <= warmup, "start_spread", "%s is longer than the warm-up (%s): servers would still be starting when the first fault hits", s.StartSpread, lab.Duration(warmup))
	return c
}

// Images: the servers run from chaoslab's own image, or the user's.
func (s *Settings) Images() []lab.ImageNeed {
	if s.Program != nil && s.Program.Image != "" {
		return []lab.ImageNeed{{Name: "user-server", Ref: s.Program.Image, Defaults: []string{s.Program.Image}}}
	}
	return []lab.ImageNeed{{Name: lab.AgentImage}}
}

// Facts describe the fleet in a report.
func (s *Settings) Facts() []lab.Fact {
	threads := "one OS thread per peer (grows with the fleet)"
	if s.PeerThreads == frontend.Pool {
		threads = fmt.Sprintf("a pool of %d threads (independent of the fleet's size)", s.PoolThreads)
	}
	cells := "one cell: every server peers with every other"
	if s.CellSize > 0 {
		cells = fmt.Sprintf("cells of %d servers; a server peers only inside its cell", s.CellSize)
	}
	boot := "from peers: every peer sends its full shard-map (the store only when no peer answers)"
	if s.Bootstrap == frontend.FromStore {
		boot = "from the store (etcd); peers send digests"
	}
	restart := "every server at once"
	if s.RestartRate > 0 {
		restart = fmt.Sprintf("%g servers/s (one every %.3g s)", s.RestartRate, 1/s.RestartRate)
	}
	cpu := "no limit"
	if s.CPUQuota > 0 {
		cpu = strconv.FormatFloat(s.CPUQuota, 'g', -1, 64) + " cores per server (cgroup quota)"
	}
	if s.FleetCPU > 0 {
		cpu += ", " + strconv.FormatFloat(s.FleetCPU, 'g', -1, 64) + " cores for the whole fleet (the run's cgroup)"
	}
	if s.Program != nil {
		threads, cells, boot = "the user's server's own", "the user's server's own", "the user's server's own"
	}
	return []lab.Fact{
		{Name: "Kind", Value: KindName}, {Name: "Server program", Value: s.program()},
		{Name: "Fleet", Value: fmt.Sprintf("%d servers, +%d added by add-capacity (%g%%)", s.Servers, s.Added(), s.AddFraction*100)},
		{Name: "Thread limit", Value: fmt.Sprintf("%d per server (cgroup pids.max)", s.ThreadLimit)},
		{Name: "Peer threads", Value: threads}, {Name: "Cells", Value: cells}, {Name: "Bootstrap", Value: boot},
		{Name: "Shard table", Value: fmt.Sprintf("%d shards in etcd", s.Shards)},
		{Name: "Learning new members", Value: "after a random delay up to " + s.LearnSpread.String()},
		{Name: "CPU", Value: cpu},
		{Name: "Health check", Value: fmt.Sprintf("removed after %d failures; shard-map due %s after start", s.HealthFailures, s.HealthGrace)},
		{Name: "Operator restart", Value: restart},
		{Name: "Load", Value: fmt.Sprintf("%g routing requests/s over the fleet, at most %d in flight", s.RequestRate, s.MaxInFlight)},
	}
}

// kind is kinesis-frontend.
type kind struct{}

func (kind) Name() string              { return KindName }
func (kind) Systems() []string         { return []string{"etcd"} }
func (kind) NewSettings() lab.Settings { return NewSettings() }
func (kind) Groups() []string          { return []string{"fleet"} }
func (kind) Probe(string) lab.Target   { return &Fleet{} }
func (kind) Noun() (string, string)    { return "front-end server", "front-end servers" }

// PreferPlacement: the scenario is calibrated on local processes.
// Mended: until commit ada50dc a server whose peer registered again
// without a delete between (its earlier incarnation killed before its
// lease ran out, as the health check kills) kept dialling the earlier
// address for good, so it and the peer never routed and removals fed
// each other (both variants; on containers a route line that did not
// arrive started such a chain, route.go).
func (kind) Mended() (time.Time, string) {
	return time.Date(2026, 12, 7, 2, 55, 19, 0, time.UTC), "the front-end server reached a peer registered again at its new address"
}

func (kind) PreferPlacement() (string, string) {
	// Measured on a 2-core machine: the engine creates the fleet's
	// containers about one a second, which paces an "all at once" restart
	// by itself (it recovered in 38 s where 32 processes started together
	// never did), and the static server in the image runs 1-2 more threads
	// than the local build, which moves the fleet against the same limit.
	return "local", "the front-end fleet runs as local processes (each in a cgroup with pids.max); --placement docker runs it in containers, where the engine paces restarts by itself"
}

// Preflight: a user's server that is a command of this host runs only
// where host commands do; the thread limit only where a placement holds
// each server to one; a full mesh of containers on one bridge needs room
// in the neighbour table.
func (kind) Preflight(p lab.Placement, s lab.Settings) error {
	st := s.(*Settings)
	if st.Program != nil && st.Program.Image == "" && !lab.RunsHostCommands(p) {
		return fmt.Errorf("your server is a command of this host, which the %s placement cannot run: give its image too (--client-image, or program.image)", p.Name())
	}
	if why := lab.RefusesLimit(p, "pids"); st.ThreadLimit > 0 && why != "" {
		return fmt.Errorf("thread_limit %d: %s", st.ThreadLimit, why)
	}
	if p.Name() != "docker" {
		return nil
	}
	return CheckNeighbours(st.Servers + st.Added() + 8)
}

func (kind) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: "fleet.routing_success", Title: "Routing requests answered with a route, share per second", Unit: "share"},
		{Name: "server.threads", Title: "OS threads per front-end server (/proc), against the thread limit", Unit: "threads", Marks: []string{"thread-limit"}},
		{Name: "fleet.servers_routing", Title: "Front-end servers routing (complete shard-map)", Unit: "servers"},
		{Name: "server.routing_success", Title: "Routing success per front-end server, share per second", Unit: "share"},
		{Name: "fleet.routing_p99_ms", Title: "Routing latency, 99th percentile per second (ms)", Unit: "ms"},
	}
}

func (kind) Metrics() []lab.MetricDef {
	m := func(name, unit, doc string) lab.MetricDef { return lab.MetricDef{Name: name, Unit: unit, Doc: doc} }
	return []lab.MetricDef{
		m("fleet.routing_success.before_trigger", "share", "share of routing requests answered with a route in the 10 s before the capacity addition"),
		m("fleet.routing_success.during_trigger", "share", "share of routing requests answered with a route from the capacity addition until its removal"),
		m("fleet.routing_success.min_server_after_trigger", "share", "lowest share of routing requests answered by any server of the original fleet, from the end of the learning spread after the capacity addition until its removal"),
		m("fleet.routing_success.max_server_after_trigger", "share", "highest share of routing requests answered by any server of the original fleet over the same window (below the bound: every server failed)"),
		m("fleet.routing_success.end", "share", "share of routing requests answered with a route in the last 10 s of the run"),
		m("fleet.threads.before_trigger_max", "threads", "most OS threads of any server before the capacity addition (/proc/<pid>/status)"),
		{Name: "fleet.threads.max", Unit: "threads", Doc: "most OS threads of any server over the run", Reducer: &lab.Reducer{Series: "server.threads", Reduce: "max"}},
		m("fleet.threads.max_ratio_to_limit", "ratio", "fleet.threads.max divided by the thread limit (the cgroup's pids.max); 1 means a server reached the limit"),
		m("fleet.thread_limit_exits", "processes", "server processes the Go runtime aborted because the OS refused a new thread"),
		m("fleet.pids_limit_refusals", "clones", "thread creations the kernel refused at pids.max, over every server (pids.events max)"),
		m("fleet.health_removals", "servers", "servers removed by the health check (no answer, or shard-map still incomplete after the grace period)"),
		m("fleet.restart.start_spread_s", "s", "seconds between the first and the last server's first start after the operator's restart began: how all-at-once an all-at-once restart was on this placement"),
		m("fleet.recovery_after_restart_s", "s", "seconds from the operator's restart (the moment the servers are stopped and started; on containers, once their next incarnations have been created ahead) until every server of the fleet routes and every second after has at least 99% of requests routed (+Inf when that never happens in the run)"),
	}
}

// runAgent is `chaoslab agent kinesis-frontend --config JSON`: it prints
// the addresses it listens on, then serves.
func runAgent(ctx context.Context, config json.RawMessage, out io.Writer, log *slog.Logger) error {
	var cfg frontend.Config
	if err := json.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	cfg.Logger = log.With("server", cfg.ID)
	cfg.OnListen = func(peer, route string) {
		fmt.Fprintf(out, "{\"peer\":%q,\"route\":%q}\n", peer, route)
	}
	return frontend.Run(ctx, cfg)
}
