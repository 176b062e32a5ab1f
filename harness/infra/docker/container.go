package docker

// The container wrapper the backends (harness/dockeretcd, dockerconsul,
// dockerzk) share: published ports on 127.0.0.1, resource options, and
// Container's live faults (pause, SIGKILL, limits, network).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/moby/moby/api/types/container"
	mobynet "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Loopback is the only host address ports are published on and dialled.
const Loopback = "127.0.0.1"

// State is a container's state as the engine reports it.
type State struct {
	Status  string // created, running, paused, restarting, removing, exited, dead
	Running bool   // true while paused too
	Paused  bool
	// OOMKilled: the kernel's OOM killer killed a process of the
	// container. The engine does not clear it when the same container is
	// started again (Docker 20.10 keeps it): after a Restart, StartedAt
	// later than FinishedAt says the kill was before the current start.
	OOMKilled  bool
	Dead       bool
	ExitCode   int // 137 after SIGKILL (an OOM kill included)
	Error      string
	Pid        int
	StartedAt  time.Time
	FinishedAt time.Time
}

func stateOf(s *container.State) State {
	if s == nil {
		return State{}
	}
	out := State{
		Status: string(s.Status), Running: s.Running, Paused: s.Paused, OOMKilled: s.OOMKilled,
		Dead: s.Dead, ExitCode: s.ExitCode, Error: s.Error, Pid: s.Pid,
	}
	out.StartedAt, _ = time.Parse(time.RFC3339Nano, s.StartedAt)
	out.FinishedAt, _ = time.Parse(time.RFC3339Nano, s.FinishedAt)
	return out
}

// PublishPorts exposes the ports and binds each to 127.0.0.1 only, on a
// host port the engine picks.
func PublishPorts(ports ...string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithExposedPorts(ports...)(req); err != nil {
			return err
		}
		for _, port := range ports {
			p, err := mobynet.ParsePort(port)
			if err != nil {
				return fmt.Errorf("publish %s: %w", port, err)
			}
			if err := testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				if hc.PortBindings == nil {
					hc.PortBindings = mobynet.PortMap{}
				}
				hc.PortBindings[p] = []mobynet.PortBinding{{HostIP: netip.MustParseAddr(Loopback), HostPort: ""}}
			})(req); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithMemoryLimit sets the container's memory limit (and memory+swap to
// the same, so no swap) in bytes.
func WithMemoryLimit(bytes int64) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.Memory = bytes
		hc.MemorySwap = bytes
	})
}

// WithCPULimit limits the container to cores CPUs (docker run --cpus).
func WithCPULimit(cores float64) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.NanoCPUs = int64(cores * 1e9)
	})
}

// WithPidsLimit limits the number of tasks in the container.
func WithPidsLimit(n int64) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.PidsLimit = &n
	})
}

// WithRunID labels the container as part of run runID (LabelRun).
func WithRunID(runID string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := CheckRunID(runID); err != nil {
			return err
		}
		return testcontainers.WithLabels(Labels(runID))(req)
	}
}

// CheckImage fails unless img is present locally (nothing is pulled).
func CheckImage(ctx context.Context, img string) error {
	ok, err := ImageExists(ctx, img)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("image %s is not present (no registry can be reached; build it with `chaoslab images build`, or pass WithPull): %w", img, ErrNoImage)
	}
	return nil
}

// HostAddress returns "127.0.0.1:<host port>" of a published port of
// the container. The host port changes when the container is started
// again or reconnected.
func HostAddress(ctx context.Context, c testcontainers.Container, port string) (string, error) {
	p, err := c.MappedPort(ctx, port)
	if err != nil {
		return "", fmt.Errorf("find host port of %s: %w", port, err)
	}
	return net.JoinHostPort(Loopback, p.Port()), nil
}

// Container is a started container with the helpers the backends share.
// It embeds the testcontainers-go container, so its methods (Inspect,
// MappedPort, Start, Stop, Terminate...) are there too.
type Container struct {
	testcontainers.Container
}

// RunState returns the container's state (running, paused, OOM killed,
// exit code). (State is taken by testcontainers.Container.)
func (c *Container) RunState(ctx context.Context) (State, error) {
	ins, err := c.Inspect(ctx)
	if err != nil {
		return State{}, fmt.Errorf("inspect container: %w", err)
	}
	return stateOf(ins.State), nil
}

// IP returns the container's address on the network (name or ID), or an
// invalid Addr if it is not attached.
func (c *Container) IP(ctx context.Context, network string) (netip.Addr, error) {
	ins, err := c.Inspect(ctx)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("inspect container: %w", err)
	}
	if ins.NetworkSettings == nil {
		return netip.Addr{}, nil
	}
	for name, ep := range ins.NetworkSettings.Networks {
		if ep != nil && (name == network || ep.NetworkID == network) {
			return ep.IPAddress, nil
		}
	}
	return netip.Addr{}, nil
}

// Pause freezes every process of the container (docker pause: the freezer
// cgroup). The published ports still accept connections; nothing answers.
func (c *Container) Pause(ctx context.Context) error {
	cli, err := Client(ctx)
	if err != nil {
		return fmt.Errorf("pause container: %w", err)
	}
	if _, err := cli.ContainerPause(ctx, c.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container: %w", err)
	}
	return nil
}

// Unpause thaws a paused container.
func (c *Container) Unpause(ctx context.Context) error {
	cli, err := Client(ctx)
	if err != nil {
		return fmt.Errorf("unpause container: %w", err)
	}
	if _, err := cli.ContainerUnpause(ctx, c.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("unpause container: %w", err)
	}
	return nil
}

// killWait bounds how long Kill waits for the container to stop.
const killWait = 30 * time.Second

// Kill sends SIGKILL to the container (thawing it first if paused) and
// waits until the engine reports it stopped.
func (c *Container) Kill(ctx context.Context) error {
	cli, err := Client(ctx)
	if err != nil {
		return fmt.Errorf("kill container: %w", err)
	}
	id := c.GetContainerID()
	if st, err := c.RunState(ctx); err == nil && st.Paused {
		_, _ = cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	if _, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("kill container: %w", err)
	}
	deadline := time.Now().Add(killWait)
	for {
		st, err := c.RunState(ctx)
		if err != nil {
			return fmt.Errorf("kill container: %w", err)
		}
		if !st.Running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill container: still running %v after SIGKILL", killWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill container: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// update changes the container's resources live (docker update).
func (c *Container) update(ctx context.Context, r container.Resources) error {
	cli, err := Client(ctx)
	if err != nil {
		return err
	}
	_, err = cli.ContainerUpdate(ctx, c.GetContainerID(), client.ContainerUpdateOptions{Resources: &r})
	return err
}

// HostCPUs is the number of CPUs the engine reports.
func HostCPUs(ctx context.Context) (int, error) {
	cli, err := Client(ctx)
	if err != nil {
		return 0, err
	}
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return 0, err
	}
	if info.Info.NCPU <= 0 {
		return 0, errors.New("engine reports no CPUs")
	}
	return info.Info.NCPU, nil
}

// LimitCPU limits the live container to cores CPUs (docker update --cpus).
// cores <= 0 lifts the limit: the engine cannot unset a CPU limit once set
// (NanoCpus 0 means "no change"), so the limit becomes all of the engine's
// CPUs, which is no limit.
func (c *Container) LimitCPU(ctx context.Context, cores float64) error {
	nano := int64(cores * 1e9)
	if cores <= 0 {
		n, err := HostCPUs(ctx)
		if err != nil {
			return fmt.Errorf("limit cpu: %w", err)
		}
		nano = int64(n) * 1e9
	}
	if err := c.update(ctx, container.Resources{NanoCPUs: nano}); err != nil {
		return fmt.Errorf("limit cpu to %.2f cores: %w", cores, err)
	}
	return nil
}

// CPULimit returns the container's CPU limit in cores (0: none; a limit
// of every CPU of the engine, which is how LimitCPU lifts one, is none).
func (c *Container) CPULimit(ctx context.Context) (float64, error) {
	ins, err := c.Inspect(ctx)
	if err != nil {
		return 0, fmt.Errorf("read cpu limit: %w", err)
	}
	if ins.HostConfig == nil || ins.HostConfig.NanoCPUs == 0 {
		return 0, nil
	}
	cores := float64(ins.HostConfig.NanoCPUs) / 1e9
	if n, err := HostCPUs(ctx); err == nil && cores >= float64(n) {
		return 0, nil
	}
	return cores, nil
}

// MemoryLimit returns the container's memory limit in bytes (0: none).
func (c *Container) MemoryLimit(ctx context.Context) (int64, error) {
	ins, err := c.Inspect(ctx)
	if err != nil {
		return 0, fmt.Errorf("read memory limit: %w", err)
	}
	if ins.HostConfig == nil {
		return 0, nil
	}
	return ins.HostConfig.Memory, nil
}

// SetMemoryLimit sets the live container's memory limit (and memory+swap,
// so no swap) in bytes. With cgroup v1 a limit below what the kernel can
// reclaim down to is refused (EBUSY) rather than OOM-killing; with cgroup
// v2 the kernel reclaims and OOM-kills.
func (c *Container) SetMemoryLimit(ctx context.Context, bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("set memory limit: %d bytes: must be positive", bytes)
	}
	if err := c.update(ctx, container.Resources{Memory: bytes, MemorySwap: bytes}); err != nil {
		return fmt.Errorf("set memory limit to %d bytes: %w", bytes, err)
	}
	return nil
}

// MemoryUsage returns the container's memory usage in bytes as the engine
// reports it (the cgroup's usage: page cache included).
func (c *Container) MemoryUsage(ctx context.Context) (uint64, error) {
	st, err := c.memoryStats(ctx)
	if err != nil {
		return 0, fmt.Errorf("read memory usage: %w", err)
	}
	return st.Usage, nil
}

// MemoryFileBytes returns the page cache the kernel charges to the
// container (memory.stat "total_cache" with cgroup v1, "file" with v2):
// its executable's pages, among others. The anonymous memory a process
// allocates is not in it.
func (c *Container) MemoryFileBytes(ctx context.Context) (uint64, error) {
	st, err := c.memoryStats(ctx)
	if err != nil {
		return 0, fmt.Errorf("read memory stats: %w", err)
	}
	for _, k := range []string{"total_cache", "cache", "file"} {
		if v, ok := st.Stats[k]; ok {
			return v, nil
		}
	}
	return 0, errors.New("read memory stats: the engine reports no page cache figure")
}

// memoryStats is one sample of the container's memory figures.
func (c *Container) memoryStats(ctx context.Context) (container.MemoryStats, error) {
	cli, err := Client(ctx)
	if err != nil {
		return container.MemoryStats{}, err
	}
	res, err := cli.ContainerStats(ctx, c.GetContainerID(), client.ContainerStatsOptions{})
	if err != nil {
		return container.MemoryStats{}, err
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return container.MemoryStats{}, err
	}
	return st.MemoryStats, nil
}

// SetPidsLimit sets the live container's pids limit; n <= 0 lifts it.
func (c *Container) SetPidsLimit(ctx context.Context, n int64) error {
	if n <= 0 {
		n = -1
	}
	if err := c.update(ctx, container.Resources{PidsLimit: &n}); err != nil {
		return fmt.Errorf("set pids limit to %d: %w", n, err)
	}
	return nil
}

// Disconnect takes the container off the network (name or ID). With no
// other network it then has no address at all: peers and the published
// ports both stop reaching it.
func (c *Container) Disconnect(ctx context.Context, network string) error {
	cli, err := Client(ctx)
	if err != nil {
		return fmt.Errorf("disconnect from %s: %w", network, err)
	}
	if _, err := cli.NetworkDisconnect(ctx, network, client.NetworkDisconnectOptions{Container: c.GetContainerID(), Force: true}); err != nil {
		return fmt.Errorf("disconnect from %s: %w", network, err)
	}
	return nil
}

// Connect attaches the container to the network with the aliases, at
// address ip if it is valid (the engine accepts that only on networks with
// a subnet of the user's).
func (c *Container) Connect(ctx context.Context, network string, ip netip.Addr, aliases ...string) error {
	cli, err := Client(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", network, err)
	}
	ep := &mobynet.EndpointSettings{Aliases: aliases}
	if ip.IsValid() {
		ep.IPAMConfig = &mobynet.EndpointIPAMConfig{IPv4Address: ip}
	}
	if _, err := cli.NetworkConnect(ctx, network, client.NetworkConnectOptions{
		Container: c.GetContainerID(), EndpointConfig: ep,
	}); err != nil {
		return fmt.Errorf("connect to %s: %w", network, err)
	}
	return nil
}
