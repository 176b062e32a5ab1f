package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// holdExecCmd is the shim a user's program is held by in a container
// started ahead (harness/placement/container): `chaoslab agent hold-exec
// -- PROGRAM ARGS...` says it holds, waits for SIGUSR1, then becomes the
// program (same pid, so signals reach it); a SIGTERM while it holds ends
// it.
func holdExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "hold-exec -- PROGRAM [ARGS...]",
		Short:              "Hold a program until SIGUSR1, then run it in this process's place",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			argv, err := holdExecArgs(args)
			if err != nil {
				return err
			}
			path, err := programPath(argv[0])
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if !holdUntilReleased(ctx, os.Stdout) {
				return nil
			}
			stop()
			if err := syscall.Exec(path, argv, os.Environ()); err != nil {
				return fmt.Errorf("exec program %s: %w", path, err)
			}
			return nil
		},
	}
}

// holdExecArgs is the program to run: the arguments after one leading
// "--".
func holdExecArgs(args []string) ([]string, error) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0] == "" {
		return nil, errors.New("hold-exec: no program to run (chaoslab agent hold-exec -- PROGRAM ARGS...)")
	}
	return args, nil
}

// programPath is the program to run, found on $PATH when its name has
// no slash, as the container engine finds an entrypoint: before it holds,
// so that a missing program fails before it is released.
func programPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("find program %s: %w", name, err)
	}
	return path, nil
}
