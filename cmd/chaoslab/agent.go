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
	_ = mirror.MarkFlagRequired("servers")
	cmd.AddCommand(mirror)
	return cmd
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
