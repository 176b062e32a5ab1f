package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/infra/limits"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// agentCmd runs the programs the harness starts as processes (or
// containers) of their own, one per registered agent: `chaoslab agent
// NAME --config JSON`. Users do not call them directly.
func agentCmd() *cobra.Command {
	var config string
	var duration time.Duration
	cmd := &cobra.Command{
		Use:    "agent NAME --config JSON",
		Short:  "Programs the harness runs as separate processes (" + strings.Join(lab.AgentNames(), ", ") + ")",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := lab.GetAgent(args[0])
			if err != nil {
				return err
			}
			if !json.Valid([]byte(config)) {
				return fmt.Errorf("agent %s: --config is not a JSON document", a.Name)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			if os.Getenv(limits.LockTextEnv) == "1" {
				n, err := limits.LockText()
				if err != nil {
					return err
				}
				log.Info("executable locked in memory", "bytes", n)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if os.Getenv(lab.HoldEnv) == "1" && !holdUntilReleased(ctx, os.Stdout) {
				return nil
			}
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			return a.Run(ctx, json.RawMessage(config), os.Stdout, log)
		},
	}
	cmd.Flags().StringVar(&config, "config", "{}", "the agent's settings, one JSON document")
	cmd.Flags().DurationVar(&duration, "duration", 0, "stop after this long (0 = until signalled)")
	return cmd
}

// holdUntilReleased says on out that the agent holds and waits for
// SIGUSR1 (true) or the end of ctx (false): a container started ahead
// runs its agent when the harness releases it (lab.HoldEnv).
func holdUntilReleased(ctx context.Context, out io.Writer) bool {
	release := make(chan os.Signal, 1)
	signal.Notify(release, syscall.SIGUSR1)
	defer signal.Stop(release)
	fmt.Fprintln(out, lab.HeldLine)
	select {
	case <-release:
		return true
	case <-ctx.Done():
		return false
	}
}
