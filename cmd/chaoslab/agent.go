package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/limits"
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
