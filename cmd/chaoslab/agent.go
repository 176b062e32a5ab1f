package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/frontend"
	"github.com/chaoslab/chaoslab/harness/zkmirror"
)

// agentCmd holds the client programs the harness starts as processes of
// their own; users do not call them directly.
func agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Client programs the harness runs as separate processes",
		Hidden: true,
	}
	var cfg zkmirror.Config
	var servers string
	var cgroupWait string
	var duration time.Duration
	var lockText bool
	mirror := &cobra.Command{
		Use:   "zk-tree-mirror",
		Short: "Mirror a ZooKeeper subtree and print one JSON sample per interval",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Servers = strings.Split(servers, ",")
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("client", cfg.ID)
			if cgroupWait != "" {
				if err := waitInCgroup(cmd.Context(), cgroupWait); err != nil {
					return err
				}
			}
			if lockText {
				n, err := zkmirror.LockText()
				if err != nil {
					return err
				}
				cfg.Logger.Info("executable locked in memory", "bytes", n)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			return zkmirror.Run(ctx, cfg, os.Stdout)
		},
	}
	f := mirror.Flags()
	f.StringVar(&cfg.ID, "id", "client", "client id in samples and logs")
	f.StringVar(&servers, "servers", "", "comma-separated host:port list")
	f.StringVar(&cfg.Root, "root", "/chaoslab/tree", "subtree to mirror")
	f.StringVar(&cfg.Strategy, "strategy", zkmirror.Paced, "full-refresh or paced")
	f.IntVar(&cfg.Window, "window", 8, "requests in flight (paced)")
	f.IntVar(&cfg.Retries, "retries", 3, "re-queues of a failed read")
	f.DurationVar(&cfg.RetryBase, "retry-base", time.Second, "first back-off of a re-queued read")
	f.DurationVar(&cfg.SessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout")
	f.DurationVar(&cfg.ReportInterval, "report-interval", time.Second, "how often to print a sample")
	f.IntVar(&cfg.HotCount, "hot-count", 0, "number of hot znodes the writer updates")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	f.StringVar(&cgroupWait, "cgroup-wait", "", "wait until /proc/self/cgroup names this path before starting")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0 = until signalled)")
	f.BoolVar(&lockText, "lock-text", false, "lock the executable's pages in memory (in a container, so that the kernel cannot reclaim them to make room for the heap)")
	_ = mirror.MarkFlagRequired("servers")
	cmd.AddCommand(mirror, frontendCmd())
	return cmd
}

// frontendCmd is the IL-0384 front-end server.
func frontendCmd() *cobra.Command {
	var cfg frontend.Config
	var etcd, cgroupWait string
	c := &cobra.Command{
		Use:   "kinesis-frontend",
		Short: "A front-end server of the IL-0384 fleet: membership and shard table in etcd, peer shard-maps, routing on loopback",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Etcd = strings.Split(etcd, ",")
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("server", cfg.ID)
			if cgroupWait != "" {
				if err := waitInCgroup(cmd.Context(), cgroupWait); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.OnListen = func(peer, route string) {
				fmt.Printf("{\"peer\":%q,\"route\":%q}\n", peer, route)
			}
			return frontend.Run(ctx, cfg)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.ID, "id", "", "server id")
	f.IntVar(&cfg.Index, "index", 0, "1-based position in the fleet (decides the cell)")
	f.StringVar(&etcd, "etcd", "", "comma-separated etcd client URLs")
	f.StringVar(&cfg.Prefix, "prefix", "/chaoslab/kinesis", "etcd prefix of the fleet")
	f.StringVar(&cfg.PeerListen, "peer-listen", "127.0.0.1:0", "address for peer connections")
	f.StringVar(&cfg.RouteListen, "route-listen", "127.0.0.1:0", "address for routing requests")
	f.StringVar(&cfg.Advertise, "advertise", "", "host peers dial (default: the listen host)")
	f.StringVar(&cfg.PeerThreads, "peer-threads", frontend.PerPeer, "per-peer or pool")
	f.IntVar(&cfg.PoolThreads, "pool-threads", 4, "threads of the pool (pool)")
	f.IntVar(&cfg.CellSize, "cell-size", 0, "servers per cell (0 = one cell)")
	f.StringVar(&cfg.Bootstrap, "bootstrap", frontend.FromPeers, "peers or store")
	f.DurationVar(&cfg.BootstrapTimeout, "bootstrap-timeout", 3*time.Second, "wait for a peer's shard-map before reading the store")
	f.DurationVar(&cfg.LearnSpread, "learn-spread", 0, "learn a new member after a random delay up to this")
	f.DurationVar(&cfg.Heartbeat, "heartbeat", time.Second, "peer message interval")
	f.IntVar(&cfg.LeaseTTL, "lease-ttl", 3, "membership lease TTL in seconds")
	f.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	f.StringVar(&cgroupWait, "cgroup-wait", "", "wait until /proc/self/cgroup names this path before starting")
	_ = c.MarkFlagRequired("id")
	_ = c.MarkFlagRequired("etcd")
	return c
}

// waitInCgroup waits until the harness has moved this process into its
// cgroup, so that the memory it allocates is charged to the limit.
func waitInCgroup(ctx context.Context, want string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err == nil && strings.Contains(string(b), want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return fmt.Errorf("wait for cgroup: not moved into %s within 10s", want)
}
