package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoslab/chaoslab/scenarios"
)

func run() error {
	return execute(context.Background(), newRoot(), os.Args[1:])
}

// execute runs root with args. An error before any command ran (an
// unknown command or flag, a wrong number of arguments) is an input error.
func execute(ctx context.Context, root *cobra.Command, args []string) error {
	var ran bool
	trackRuns(root, &ran)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !ran {
		return errInput(err)
	}
	return err
}

func newRoot() *cobra.Command {
	// Scenarios name case records; the loader checks they exist, among the
	// built-in ones and those of --cases.
	scenarios.CaseChecker = func(id string) error {
		_, err := caseRecord(id)
		return err
	}
	var verbose bool
	root := &cobra.Command{
		Use:   "chaoslab",
		Short: "Replay real outages against real ZooKeeper, etcd and Consul",
		Long: `chaoslab turns public post-mortems into executable scenarios: it starts real
servers, drives real client workloads, injects the incident's faults, and
writes a report whose verdict says whether the incident reproduced.

` + exitHelp,
		Version:       versionText(buildInfo()),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
			// --cases is read once, before the command: a record it cannot
			// read is one error, not one per scenario that looks it up.
			// Completion (of --cases' own value, say) does without;
			// validate reports such a record as its own result (as JSON
			// with -o json).
			if strings.HasPrefix(cmd.Name(), "__complete") {
				return nil
			}
			caseNotes = cmd.ErrOrStderr()
			if cmd.Name() == "validate" {
				return nil
			}
			return loadUserCases()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	casesFlag(root)
	root.AddCommand(listCmd(), showCmd(), validateCmd(), runCmd(), reportCmd(), agentCmd())
	root.AddCommand(imagesCmd(), simCmd(), benchCmd(), gamedayCmd(), trainCmd())
	root.AddCommand(versionCmd(), faultsCmd(), metricsCmd(), schemaCmd(), reproductionCmd(), newCmd())
	return root
}
