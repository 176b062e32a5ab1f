// Package consul is the Consul system: servers and client agents of the
// Consul server built from tools/consul (1.14.11, the last MPL-2.0 line),
// described once and started by the placement (local processes on
// loopback, containers of the official image or its local equivalent);
// each client agent may run under a memory limit of its own, as in a pod,
// and be restarted after its death with a back-off, as a kubelet does. Its
// members' roles are the raft leader, followers and agents; its sampler
// reads each node's own metrics (/v1/agent/metrics) on the run's clock.
package consul

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/servers"
)

// Name is the system's registered name.
const Name = "consul"

// Images.
const (
	// DefaultImage is what `chaoslab images build` produces: FROM scratch
	// with the static consul binary.
	DefaultImage = images.ConsulRef
	// OfficialImage is HashiCorp's image, for machines that have it.
	OfficialImage = "hashicorp/consul:" + images.ConsulVersion
	// imageBinary is the server in both images (always the entrypoint: the
	// official image's script would add -data-dir and -config-dir).
	imageBinary = "/bin/consul"
)

func init() { lab.RegisterSystem(&System{}) }

// Topology is a Consul datacenter: servers and client agents.
type Topology struct {
	// Servers is the number of Consul servers, 1 to 5.
	Servers int `yaml:"servers" json:"servers"`
	// Agents is the number of client agents (a pod's sidecar, a node's
	// agent), 0 to 20.
	Agents int `yaml:"agents" json:"agents"`
	// AgentMemoryMB is each client agent's kernel-enforced memory limit
	// (0 = none): a cgroup of its own, or its container's.
	AgentMemoryMB int `yaml:"agent_memory_mb" json:"agent_memory_mb"`
	// RaftMultiplier is the servers' performance.raft_multiplier (1 elects
	// and notices a lost leader 5 times sooner than Consul's default 5).
	RaftMultiplier int `yaml:"raft_multiplier" json:"raft_multiplier"`
	// AgentRestart restarts a client agent that died (OOM-killed by its
	// memory cgroup, or exited) in the same limit, after a back-off that
	// doubles up to a cap, like a pod's CrashLoopBackOff (scaled): e.g.
	// {initial: 1s, max: 10s}. Off (no restart) unless set. An OOM kill
	// is read from the agent's cgroup (oom_kill) or the engine's state.
	AgentRestart instances.Backoff `yaml:"agent_restart" json:"agent_restart"`
	// AgentEnv is more environment for every client agent's process or
	// container, e.g. {GOMEMLIMIT: 80MiB}: a soft memory limit
	// for the Go runtime under the hard limit of agent_memory_mb. None
	// unless set.
	AgentEnv map[string]string `yaml:"agent_env" json:"agent_env,omitempty"`
	// Image is the nodes' image on the docker placement (default: the
	// official image, else the local equivalent).
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
}

// Check validates the topology.
func (t *Topology) Check() []lab.Problem {
	var c lab.Checks
	c.Need(t.Servers >= 1 && t.Servers <= 5, "servers", "want 1 to 5, got %d", t.Servers)
	c.Need(t.Agents >= 0 && t.Agents <= 20, "agents", "want 0 to 20, got %d", t.Agents)
	c.Need(t.AgentMemoryMB == 0 || t.AgentMemoryMB >= lab.MinGoMemoryMB, "agent_memory_mb", "want 0 (none) or at least %d MiB, the least a Consul agent (a Go process) starts in, got %d", lab.MinGoMemoryMB, t.AgentMemoryMB)
	c.Need(t.AgentMemoryMB <= 1<<20, "agent_memory_mb", "%d MiB is more than 1 TiB", t.AgentMemoryMB)
	c.Need(t.RaftMultiplier >= 1 && t.RaftMultiplier <= 10, "raft_multiplier", "want 1 to 10, got %d", t.RaftMultiplier)
	c = append(c, t.AgentRestart.Check("agent_restart")...)
	for k := range t.AgentEnv {
		c.Msg("agent_env."+k, lab.CheckEnvName(k))
	}
	c.Need(len(t.AgentEnv) == 0 || t.Agents > 0, "agent_env", "there are no agents (agents is 0)")
	c.Need(!t.AgentRestart.On() || t.Agents > 0, "agent_restart", "there are no agents to restart (agents is 0)")
	return c
}

// Images: the nodes' image.
func (t *Topology) Images() []lab.ImageNeed {
	return []lab.ImageNeed{{Name: Name, Ref: t.Image, Defaults: []string{DefaultImage, OfficialImage}}}
}

// Facts describe the datacenter in a report.
func (t *Topology) Facts() []lab.Fact {
	mem := "no memory limit"
	if t.AgentMemoryMB > 0 {
		mem = fmt.Sprintf("each agent under a %d MiB memory limit", t.AgentMemoryMB)
	}
	if t.AgentRestart.On() {
		mem += ", " + t.AgentRestart.String()
	}
	for _, k := range slices.Sorted(maps.Keys(t.AgentEnv)) {
		mem += fmt.Sprintf(", %s=%s", k, t.AgentEnv[k])
	}
	return []lab.Fact{{Name: "Consul", Value: fmt.Sprintf("%d servers and %d client agents (%s), Consul %s, raft multiplier %d", t.Servers, t.Agents, mem, images.ConsulVersion, t.RaftMultiplier)}}
}

// System is Consul.
type System struct {
	mu     sync.Mutex
	binary string
}

func (*System) Name() string               { return Name }
func (*System) SampleEvery() time.Duration { return time.Second }
func (*System) Roles() []string            { return []string{lab.RoleLeader, lab.RoleFollower, lab.RoleAgent} }

// ListsClientConnections: Consul lists none; the lab relays each client's
// HTTP connections to its agent and counts its requests
// (lab.ClientRelayer).
func (*System) ListsClientConnections() string {
	return "a relay of the lab's in front of each client, which counts its HTTP requests (local placement only)"
}

// RelaysClients: the lab counts what Consul does not.
func (*System) RelaysClients() bool { return true }
func (*System) NewTopology() lab.Settings {
	return &Topology{Servers: 1, Agents: 2, RaftMultiplier: 1}
}

func (*System) Series() []lab.SeriesDef {
	return []lab.SeriesDef{
		{Name: "server.alloc_mb", Title: "Go heap in use per Consul node (MiB, /v1/agent/metrics)", Unit: "MiB"},
		{Name: "server.goroutines", Title: "Goroutines per Consul node (/v1/agent/metrics)", Unit: "goroutines"},
		{Name: lab.SeriesServerRequests, Title: "Requests each Consul node received: RPCs, HTTP API calls and DNS queries (cumulative over its finished 10 s metric intervals, /v1/agent/metrics)", Unit: "requests"},
		{Name: SeriesOOMKills, Title: "Client agents OOM-killed by their memory cgroup (cumulative, the kernel's oom_kill; per pod and all agents)", Unit: "kills", Marks: []string{"oom-kill", "agent-restart"}},
		{Name: SeriesRestarts, Title: "Client agents restarted after death (cumulative, per pod and all agents)", Unit: "restarts"},
		{Name: SeriesDown, Title: "Time client agents were down: dead, in back-off or not yet joined (s, cumulative)", Unit: "s"},
	}
}

func (*System) Metrics() []lab.MetricDef {
	return []lab.MetricDef{
		{Name: "consul.alloc_mb.max", Unit: "MiB", Doc: "largest Go heap of any Consul node (/v1/agent/metrics)",
			Reducer: &lab.Reducer{Series: "server.alloc_mb", Reduce: "max"}},
		{Name: "agents.oom_kills", Unit: "kills", Doc: "client agents OOM-killed by their memory cgroup, all agents (the kernel's oom_kill counter; with agent_restart)",
			Reducer: &lab.Reducer{Series: SeriesOOMKills, Reduce: "max"}},
		{Name: "agents.restarts", Unit: "restarts", Doc: "client agents restarted after death, all agents (agent_restart)",
			Reducer: &lab.Reducer{Series: SeriesRestarts, Reduce: "max"}},
		{Name: "agents.down_s", Unit: "s", Doc: "time client agents were down (dead, in back-off, not yet joined), summed over agents (agent_restart)",
			Reducer: &lab.Reducer{Series: SeriesDown, Reduce: "max"}},
	}
}

// Prepare builds (or finds in the cache) the consul binary where
// programs of this machine run (local processes); images are the
// placement's.
func (s *System) Prepare(ctx context.Context, p lab.Placement, log *slog.Logger) error {
	bin, err := servers.Binary(ctx, p, log, Name, images.ConsulVersion, images.ConsulBinary)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.binary = bin
	s.mu.Unlock()
	return nil
}

// Probe is a node as it runs on any placement: the generic faults act on
// it through its placement.
func (*System) Probe(string) (lab.Member, error) { return &member{Member: &servers.Member{}}, nil }

// apiClient is a client of one node's HTTP API.
func apiClient(addr string) (*api.Client, error) {
	cfg := api.DefaultConfig()
	cfg.Address = addr
	cfg.HttpClient = nil
	cfg.Transport.ResponseHeaderTimeout = 2 * time.Second
	return api.NewClient(cfg)
}
