package zkmirror

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// KindName is the workload kind: N mirror clients, a seeded tree and a
// writer (IL-0587's proxies).
const KindName = "zk-tree-mirror"

func init() {
	lab.RegisterKind(kind{})
	lab.RegisterAgent(lab.Agent{Name: KindName, Doc: "mirror a ZooKeeper subtree and print one JSON sample per interval", Run: runAgent})
}

// Settings are a zk-tree-mirror workload's, each declared once here with
// its default in NewSettings.
type Settings struct {
	// Clients is the number of client processes.
	Clients int `yaml:"clients" json:"clients"`
	// StartSpread spreads the clients' starts evenly over this span of the
	// warm-up, as a fleet comes up one instance at a time.
	StartSpread lab.Duration `yaml:"start_spread" json:"start_spread"`
	Client      `yaml:",inline"`
	// Tree is the subtree the harness seeds and every client mirrors.
	Tree Tree `yaml:"tree" json:"tree"`
	// Ballast is how many znodes (of 64 bytes each) the harness seeds
	// beside the tree, under <tree.path>-ballast, rounded up to whole
	// thousands: state no client reads, which a full snapshot sync to a
	// new member carries (IL-0277: the rest of the coordination layer).
	Ballast int `yaml:"ballast" json:"ballast"`
	// MemoryLimitMB is the kernel-enforced memory limit of each client (0 = none).
	MemoryLimitMB int `yaml:"memory_limit_mb" json:"memory_limit_mb"`
	// Restart restarts a client that died, after RestartDelay, as a
	// supervisor (Kubernetes) would.
	Restart bool `yaml:"restart" json:"restart"`
	// RestartDelay is how long a dead client stays down before it is restarted.
	RestartDelay lab.Duration `yaml:"restart_delay" json:"restart_delay"`
	// Writer changes znodes at a steady rate so that staleness is measurable.
	Writer WriterSettings `yaml:"writer" json:"writer"`
	// FreshWithin is the staleness under which a mirror counts as fresh.
	FreshWithin lab.Duration `yaml:"fresh_within" json:"fresh_within"`
	// Program, when set, is a user's mirror client run in place of
	// chaoslab's own (the client settings above then only describe the
	// built-in one); see docs/bring-your-own-client.md.
	Program *lab.ClientProgram `yaml:"program,omitempty" json:"program,omitempty"`
}

// SetClient runs a user's client program in place of the built-in one.
func (s *Settings) SetClient(c *lab.ClientProgram) { s.Program = c }

// CheckIneffective: a window bounds nothing for a full-refresh client
// that does not start paced (it reads everything at once).
func (s *Settings) CheckIneffective() []lab.Problem {
	var c lab.Checks
	c.Need(s.Program != nil || s.Strategy != FullRefresh || s.PacedStart, "window",
		"has no effect with strategy %s (every read at once, as Curator's TreeCache): it bounds a paced client's reads in flight (strategy: %s), or the first load with paced_start: true", FullRefresh, Paced)
	return c
}

// WriterSettings are the background writer's.
type WriterSettings struct {
	// RatePerSec is the number of znode updates per second.
	RatePerSec float64 `yaml:"rate_per_sec" json:"rate_per_sec"`
	// Share is the fraction of leaf znodes that receive updates (round robin).
	Share float64 `yaml:"share" json:"share"`
}

// NewSettings are the defaults.
func NewSettings() *Settings {
	return &Settings{
		Clients: 4,
		Client: Client{Strategy: Paced, Window: 8, Retries: 3, RetryBase: lab.Duration(time.Second),
			SessionTimeout: lab.Duration(10 * time.Second), ReportInterval: lab.Duration(time.Second)},
		Tree:         Tree{Root: "/chaoslab/tree", Fanout: []int{10, 10}, DataBytes: 1024},
		RestartDelay: lab.Duration(5 * time.Second),
		Writer:       WriterSettings{RatePerSec: 10, Share: 0.02},
		FreshWithin:  lab.Duration(2 * time.Second),
	}
}

// Bounds of the settings, from what ZooKeeper and one machine can do.
const (
	// JuteMaxBuffer is ZooKeeper's default jute.maxbuffer: the largest
	// request or response a server accepts (0xfffff bytes).
	JuteMaxBuffer = 0xfffff
	// MaxDataBytes is the most data one znode holds: a request carries
	// its path and header besides the data, within JuteMaxBuffer.
	MaxDataBytes = JuteMaxBuffer - 1024
	// MaxFanout is the most children of one znode: getChildren answers
	// every name (n0-12345, 4 bytes of length each) in one response,
	// which must fit JuteMaxBuffer.
	MaxFanout = 65536
	// MaxNodes is the most znodes the harness seeds in the tree clients mirror.
	MaxNodes = 200000
	// MaxBallast is the most ballast znodes: only the servers hold them
	// (about half a KiB each in a server's heap, 64 B of data), and a
	// snapshot sync carries them.
	MaxBallast = 400000
	// MaxTreeBytes is the most data in the tree: every server holds it
	// in its heap, and every client mirrors it.
	MaxTreeBytes = 1 << 30
	// MaxWriteRate is the writer's most writes a second: it is one
	// session writing one znode at a time, each a quorum write of about
	// a millisecond.
	MaxWriteRate = 1000
)

// Check validates the settings.
func (s *Settings) Check() []lab.Problem {
	var c lab.Checks
	c.Need(s.Clients >= 1, "clients", "want at least 1")
	c.Need(s.Clients <= lab.MaxInstances, "clients", "%d clients is more than one machine runs beside the servers (%d processes of at least %d MiB, a ZooKeeper session each)", s.Clients, lab.MaxInstances, lab.MinGoMemoryMB)
	c.Msg("start_spread", lab.CheckDuration(s.StartSpread, 0, ""))
	c = append(c, s.Client.Check()...)
	c = append(c, s.Tree.check()...)
	c.Need(s.Ballast >= 0 && s.Ballast <= MaxBallast, "ballast", "want 0 to %d znodes, got %d", MaxBallast, s.Ballast)
	c.Need(s.Writer.Share >= 0 && s.Writer.Share <= 1, "writer.share", "want 0 to 1, got %g", s.Writer.Share)
	c.Need(s.Writer.RatePerSec >= 0, "writer.rate_per_sec", "want >= 0, got %g", s.Writer.RatePerSec)
	c.Need(s.Writer.RatePerSec <= MaxWriteRate, "writer.rate_per_sec", "%g writes/s is more than %d, what one session writing one znode at a time (a quorum write of about 1 ms each) can do", s.Writer.RatePerSec, MaxWriteRate)
	c.Need(s.MemoryLimitMB >= 0, "memory_limit_mb", "want >= 0 (0 is no limit), got %d", s.MemoryLimitMB)
	c.Need(s.MemoryLimitMB <= 0 || s.Program != nil || s.MemoryLimitMB >= lab.MinGoMemoryMB, "memory_limit_mb", "%d is below %d MiB, the least a Go client process starts in", s.MemoryLimitMB, lab.MinGoMemoryMB)
	c.Need(s.MemoryLimitMB <= 0 || s.Program == nil || s.MemoryLimitMB >= lab.MinContainerMemoryMB, "memory_limit_mb", "%d is below %d MiB, the least memory limit the container engine accepts", s.MemoryLimitMB, lab.MinContainerMemoryMB)
	c.Msg("restart_delay", lab.CheckDuration(s.RestartDelay, 0, ""))
	c.Need(!s.Restart || s.RestartDelay.D() >= lab.MinRestartDelay, "restart_delay", "%s is below %s: a client that exits at once would be restarted in a busy loop", s.RestartDelay, lab.Duration(lab.MinRestartDelay))
	c.Msg("fresh_within", lab.CheckDuration(s.FreshWithin, time.Millisecond, "a mirror cannot be fresher than the writer's round trip"))
	if s.Program != nil {
		c = append(c, lab.Under("program", s.Program.Check())...)
	}
	return c
}

// CheckWarmup: the clients start over start_spread, within the warm-up.
func (s *Settings) CheckWarmup(warmup time.Duration) []lab.Problem {
	var c lab.Checks
	c.Need(s.StartSpread.D() <= warmup, "start_spread", "%s is longer than the warm-up (%s): clients would still be starting when the first fault hits", s.StartSpread, lab.Duration(warmup))
	return c
}

// ZnodeOverhead is what a znode costs a ZooKeeper server's heap besides
// its data and path: its DataNode, stat, ACL reference and map entry.
const ZnodeOverhead = 200

// CheckTopology: every server holds the tree in its heap, which must
// leave half for sessions, requests and the collector.
func (s *Settings) CheckTopology(topo lab.Settings) []lab.Problem {
	h, ok := topo.(lab.HeapSizer)
	if !ok || h.ServerHeapMB() <= 0 {
		return nil
	}
	var c lab.Checks
	need := int64(s.Tree.Nodes()) * int64(s.Tree.DataBytes+len(s.Tree.Root)+16+ZnodeOverhead)
	c.Need(need <= int64(h.ServerHeapMB())<<19, "tree.data_bytes", "%d znodes of %d bytes take about %d MiB of each server's heap, more than half of heap_mb (%d MiB): the servers would run out of memory while seeding", s.Tree.Nodes(), s.Tree.DataBytes, need>>20, h.ServerHeapMB())
	if b := BallastTree(s.Tree.Root, s.Ballast); b.Nodes() > 0 {
		need += int64(b.Nodes()) * int64(b.DataBytes+len(b.Root)+16+ZnodeOverhead)
		c.Need(need <= int64(h.ServerHeapMB())<<19, "ballast", "the tree and %d ballast znodes take about %d MiB of each server's heap, more than half of heap_mb (%d MiB)", b.Nodes(), need>>20, h.ServerHeapMB())
	}
	return c
}

// check validates the tree against what ZooKeeper accepts.
func (t Tree) check() []lab.Problem {
	var c lab.Checks
	c.Msg("tree.path", checkZnodePath(t.Root))
	c.Need(len(t.Fanout) > 0, "tree.fanout", "want at least one level")
	for i, n := range t.Fanout {
		c.Need(n >= 1, fmt.Sprintf("tree.fanout[%d]", i), "want at least 1, got %d", n)
		c.Need(n <= MaxFanout, fmt.Sprintf("tree.fanout[%d]", i), "%d children of one znode is more than %d: getChildren answers with every name in one response, which ZooKeeper holds to jute.maxbuffer (1 MiB)", n, MaxFanout)
	}
	nodes := t.Nodes()
	c.Need(nodes <= MaxNodes, "tree.fanout", "%s znodes is more than the harness seeds (%d)", countOf(nodes), MaxNodes)
	c.Need(t.DataBytes >= 0, "tree.data_bytes", "want >= 0, got %d", t.DataBytes)
	c.Need(t.DataBytes <= MaxDataBytes, "tree.data_bytes", "%d bytes is more than ZooKeeper accepts in one znode (jute.maxbuffer is 1 MiB, less the request's path and header: at most %d)", t.DataBytes, MaxDataBytes)
	if t.DataBytes <= MaxDataBytes && nodes <= MaxNodes {
		c.Need(int64(nodes)*int64(t.DataBytes) <= MaxTreeBytes, "tree.data_bytes", "%d znodes of %d bytes is %d MiB of data, more than %d MiB: every server holds the tree in its heap and every client mirrors it", nodes, t.DataBytes, int64(nodes)*int64(t.DataBytes)>>20, MaxTreeBytes>>20)
	}
	return c
}

// countOf writes a count that Tree.Nodes may have cut short.
func countOf(n int) string {
	if n >= math.MaxInt32 {
		return "more than " + strconv.Itoa(math.MaxInt32)
	}
	return strconv.Itoa(n)
}

// checkZnodePath says what ZooKeeper would refuse in a path below / ("" when nothing).
func checkZnodePath(p string) string {
	switch {
	case !strings.HasPrefix(p, "/") || len(p) < 2:
		return fmt.Sprintf("%q: want an absolute znode path below /", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Sprintf("%q: ZooKeeper refuses a path that ends with /", p)
	case len(p) > 1024:
		return fmt.Sprintf("%d characters: at most 1024 (every znode's path is sent with each request)", len(p))
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Sprintf("%q: ZooKeeper refuses an empty, . or .. path element", p)
		}
	}
	for _, r := range p {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
			return fmt.Sprintf("%q: ZooKeeper refuses control and private-use characters in a path", p)
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return fmt.Sprintf("%q: /zookeeper is ZooKeeper's own subtree", p)
	}
	return ""
}

// Preflight: a user's client that is a command of this host runs only
// where host commands do.
func (kind) Preflight(p lab.Placement, st lab.Settings) error {
	s := st.(*Settings)
	if s.Program != nil && s.Program.Image == "" && !lab.RunsHostCommands(p) {
		return fmt.Errorf("your client is a command of this host, which the %s placement cannot run: give its image too (--client-image, or program.image)", p.Name())
	}
	return nil
}

// Images: chaoslab's own client image, or the user's.
func (s *Settings) Images() []lab.ImageNeed {
	if s.Program != nil && s.Program.Image != "" {
		return []lab.ImageNeed{{Name: "user-client", Ref: s.Program.Image, Defaults: []string{s.Program.Image}}}
	}
	return []lab.ImageNeed{{Name: lab.AgentImage}}
}

// Facts describe the workload in a report.
func (s *Settings) Facts() []lab.Fact {
	window := strconv.Itoa(s.Window) + " requests in flight per client"
	if s.Strategy == FullRefresh {
		window = "none (full-refresh has no window)"
	}
	f := make([]string, len(s.Tree.Fanout))
	for i, x := range s.Tree.Fanout {
		f[i] = strconv.Itoa(x)
	}
	tree := fmt.Sprintf("%d znodes under %s (fan-out %s, %d B each)", s.Tree.Nodes(), s.Tree.Root, strings.Join(f, "×"), s.Tree.DataBytes)
	mem := "none"
	if s.MemoryLimitMB > 0 {
		mem = fmt.Sprintf("%d MiB per client (kernel-enforced)", s.MemoryLimitMB)
	}
	restart := "no"
	if s.Restart {
		restart = "yes, after " + s.RestartDelay.String()
	}
	strategy := s.Strategy
	if s.Program != nil {
		strategy, window = "the user's client: "+strings.Join(s.Program.Command, " ")+s.Program.Image, "the client's own"
	}
	return []lab.Fact{
		{Name: "Kind", Value: KindName}, {Name: "Strategy", Value: strategy}, {Name: "Window", Value: window},
		{Name: "Clients", Value: strconv.Itoa(s.Clients)}, {Name: "Tree nodes", Value: tree}, {Name: "Memory limit", Value: mem},
		{Name: "Session timeout", Value: s.SessionTimeout.String()}, {Name: "Reconnect", Value: reconnect(s.ReconnectJitter)}, {Name: "Restart on exit", Value: restart},
		{Name: "Writer", Value: fmt.Sprintf("%g writes/s to %g%% of the leaves", s.Writer.RatePerSec, s.Writer.Share*100)},
	}
}

func reconnect(jitter lab.Duration) string {
	if jitter <= 0 {
		return "at once"
	}
	return "after a random wait up to " + jitter.String()
}

// kind is zk-tree-mirror.
type kind struct{}

func (kind) Name() string              { return KindName }
func (kind) Systems() []string         { return []string{"zookeeper"} }
func (kind) NewSettings() lab.Settings { return NewSettings() }
func (kind) Groups() []string          { return []string{"clients"} }
func (kind) Probe(string) lab.Target   { return &mirrorClient{Target: &instances.Target{}} }
func (kind) Noun() (string, string)    { return "client", "clients" }

func (kind) Series() []lab.SeriesDef {
	return append([]lab.SeriesDef{
		{Name: "client.pending", Title: "Requests in flight + queued per client", Unit: "requests"},
		instances.MemoryDef(),
		{Name: "client.rss_mb", Title: "Client RSS as the client reports it (MiB): the pages it maps, not what the memory limit counts", Unit: "MiB"},
		{Name: "client.stale_s", Title: "Mirror staleness (s)", Unit: "s"},
		{Name: "client.reconnects", Title: "Reconnects per client (cumulative)", Unit: "reconnects"},
		{Name: "client.connected", Title: "Clients with a session", Unit: "0/1", State: true},
		{Name: "client.completed", Title: "Requests completed per client (cumulative)", Unit: "requests"},
	}, outsideSeries()...)
}

// outsideSeries are the outside series but the charged memory, which
// Series lists next to the RSS.
func outsideSeries() []lab.SeriesDef {
	var out []lab.SeriesDef
	for _, d := range instances.Series() {
		if d.Name != instances.SeriesMemory {
			out = append(out, d)
		}
	}
	return out
}

func (kind) Metrics() []lab.MetricDef {
	max := func(series, window string) *lab.Reducer {
		return &lab.Reducer{Series: series, Reduce: "max", Window: window}
	}
	return append(instances.Metrics(), []lab.MetricDef{
		{Name: "clients.requests_per_znode_per_reconnect", Unit: "requests", Doc: "from the first fault on, the requests the servers received from the clients beyond each client's steady rate before the fault (its lowest over 5 s: the watch re-reads the writer causes), per znode of the tree and per connection a client opened (the servers' view, cons): about 2 for a full refresh on every reconnect, near 0 for a resumed session that is not refreshed"},
		{Name: "clients.rss_mb.max", Unit: "MiB", Doc: "peak resident memory of any client process", Reducer: max("client.rss_mb", "")},
		{Name: "clients.pending.max", Unit: "requests", Doc: "peak of requests in flight plus queued in any one client", Reducer: max("client.pending", "")},
		{Name: "clients.pending.max_from_fault", Unit: "requests", Doc: "peak of requests in flight plus queued in any one client, from the start of the first fault to the end of the run", Reducer: max("client.pending", "from-fault")},
		{Name: "clients.requests.total", Unit: "requests", Doc: "requests completed by all clients"},
		{Name: "clients.reconnects.total", Unit: "reconnections", Doc: "reconnections (a new TCP connection with a session) over all clients"},
		{Name: "clients.refreshes.total", Unit: "walks", Doc: "full or paced tree walks started over all clients"},
		{Name: "clients.stale_s.max", Unit: "s", Doc: "peak staleness of any mirror after warm-up", Reducer: max("client.stale_s", "after-warmup")},
		{Name: "clients.fresh_after_fault_s", Unit: "s", Doc: "seconds from the end of the last fault until every client's mirror is fresh and stays fresh (+Inf when that never happens in the run; a dead client is stale); reported by the clients (max_seq or next_seq), not measured for a client that does not"},
	}...)
}

// runAgent is `chaoslab agent zk-tree-mirror --config JSON`.
func runAgent(ctx context.Context, config json.RawMessage, out io.Writer, log *slog.Logger) error {
	var cfg Config
	if err := json.Unmarshal(config, &cfg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	cfg.Logger = log.With("client", cfg.ID)
	return Run(ctx, cfg, out)
}
