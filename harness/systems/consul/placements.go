package consul

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/chaoslab/chaoslab/harness/consullocal"
	"github.com/chaoslab/chaoslab/harness/dockerconsul"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/limits"
	"github.com/chaoslab/chaoslab/harness/placement/container"
	"github.com/chaoslab/chaoslab/harness/placement/local"
)

func startLocal(ctx context.Context, env *lab.Env, site *local.Site, bin string, t *Topology) (lab.Cluster, error) {
	if bin == "" {
		return nil, fmt.Errorf("start consul: no consul binary (the system was not prepared)")
	}
	logs := &lab.LogFiles{Dir: env.LogDir}
	o := consullocal.Options{Servers: t.Servers, Agents: t.Agents, Binary: bin, Dir: filepath.Join(env.Dir, "consul-data"),
		RaftMultiplier: t.RaftMultiplier, Logger: env.Log, Logs: logs.Writer}
	if t.AgentMemoryMB > 0 || len(t.AgentEnv) > 0 {
		// Each agent is born in its memory cgroup, so that what it
		// allocates is charged to its limit from the start.
		o.StartAgent = func(name string, cmd *exec.Cmd) error {
			if len(t.AgentEnv) > 0 {
				cmd.Env = os.Environ()
				for k, v := range t.AgentEnv {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			if t.AgentMemoryMB == 0 {
				return cmd.Start()
			}
			g := site.Limits().Group(name)
			if g == nil {
				var err error
				if g, err = site.Limits().NewGroup(name, limits.Limits{MemoryBytes: int64(t.AgentMemoryMB) << 20}); err != nil {
					return err
				}
			}
			return g.Start(cmd)
		}
	}
	lc, err := consullocal.Start(ctx, o)
	var sup *supervisor
	closeAll := func() error {
		var err error
		if sup != nil {
			sup.stop() // before the nodes stop: their ends are not deaths
		}
		if lc != nil {
			err = lc.Close()
		}
		logs.Close()
		return err
	}
	if err != nil {
		_ = closeAll()
		_ = os.RemoveAll(o.Dir)
		return nil, fmt.Errorf("start consul: %w", err)
	}
	var nodes []node
	for _, n := range lc.Nodes() {
		nodes = append(nodes, &localNode{Node: n, group: site.Limits().Group(n.Name())})
	}
	if t.AgentRestart.On() {
		var pods []*pod
		for _, n := range lc.Agents() {
			pods = append(pods, localPod(n, site.Limits().Group(n.Name())))
		}
		sup = superviseAgents(env, t.AgentRestart, pods)
	}
	c := newCluster(env, nodes, lc.WaitHealthy, closeAll)
	c.data, c.sup = []string{o.Dir}, sup
	return c, nil
}

// localNode is one consul process; group is a client agent's memory
// cgroup (nil without agent_memory_mb).
type localNode struct {
	*consullocal.Node
	group *limits.Group
}

// MemoryLimit is the agent's cgroup limit in bytes (0: none).
func (n *localNode) MemoryLimit() int64 {
	if n.group == nil {
		return 0
	}
	return n.group.MemoryLimit()
}

// SetMemoryLimit changes the agent's cgroup limit while it runs.
func (n *localNode) SetMemoryLimit(bytes int64) error {
	if n.group == nil {
		return fmt.Errorf("%s runs without a memory cgroup", n.Name())
	}
	return n.group.SetMemoryLimit(bytes)
}

func (n *localNode) siteHTTP() string { return n.HTTPAddr() }
func (n *localNode) raftAddr() string { return n.ServerAddr() }

// A probe has no process behind it.
func (n *localNode) Name() string {
	if n.Node == nil {
		return "probe"
	}
	return n.Node.Name()
}

func startDocker(ctx context.Context, env *lab.Env, site *container.Site, t *Topology) (lab.Cluster, error) {
	o := dockerconsul.Options{Servers: t.Servers, Agents: t.Agents, Image: site.Image(Name), RunID: env.RunID,
		Network: site.Network(), LogDir: env.LogDir, Logger: env.Log, RaftMultiplier: t.RaftMultiplier, AgentEnv: t.AgentEnv}
	if t.AgentMemoryMB > 0 {
		o.AgentMemoryLimit = int64(t.AgentMemoryMB) << 20
		// The limit holds the agent's own memory, as a local process's
		// does (dockerconsul.Options.AgentBinary).
		bin, err := images.ConsulBinary(ctx, images.Options{})
		if err != nil {
			return nil, fmt.Errorf("start consul: find the agents' binary: %w", err)
		}
		o.AgentBinary = bin
	}
	dc, err := dockerconsul.StartCluster(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("start consul: %w", err)
	}
	var nodes []node
	var pods []*pod
	for _, n := range dc.Nodes() {
		nodes = append(nodes, &dockerNode{Node: n})
		if !n.IsServer() {
			pods = append(pods, dockerPod(n))
		}
	}
	var sup *supervisor
	if t.AgentRestart.On() {
		sup = superviseAgents(env, t.AgentRestart, pods)
	}
	closeAll := func() error {
		if sup != nil {
			sup.stop() // before the nodes stop: their ends are not deaths
		}
		return dc.Close()
	}
	c := newCluster(env, nodes, dc.WaitHealthy, closeAll)
	c.sup = sup
	return c, nil
}

// dockerNode is one consul container; the container faults find their
// methods on it.
type dockerNode struct{ *dockerconsul.Node }

func (n *dockerNode) siteHTTP() string { return net.JoinHostPort(n.Name(), "8500") }
func (n *dockerNode) raftAddr() string { return net.JoinHostPort(n.IP().String(), "8300") }
