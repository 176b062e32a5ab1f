package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// errExpectation is returned when a run completed but did not meet the
// scenario's expectation: exit status 1, the report says why.
var errExpectation = errors.New("the run did not meet the scenario's expectation")

// errAborted is returned when a run was interrupted: exit status 130, as
// for a command stopped by Ctrl-C.
var errAborted = errors.New("the run was interrupted; its report is marked aborted")

func exitCode(err error) int {
	switch {
	case errors.Is(err, errExpectation):
		return 1
	case errors.Is(err, errAborted):
		return 130
	}
	return 2
}

func run() error {
	// Scenarios name case records; the loader checks they exist.
	scenarios.CaseChecker = func(id string) error {
		_, err := seeds.Get(id)
		return err
	}
	var verbose bool
	root := &cobra.Command{
		Use:   "chaoslab",
		Short: "Replay real outages against real ZooKeeper, etcd and Consul",
		Long: `chaoslab turns public post-mortems into executable scenarios: it starts real
servers, drives real client workloads, injects the incident's faults, and
writes a report whose verdict says whether the incident reproduced.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	root.AddCommand(listCmd(), showCmd(), validateCmd(), runCmd(), reportCmd(), agentCmd())
	root.AddCommand(imagesCmd(), simCmd(), benchCmd())
	return root.ExecuteContext(context.Background())
}
