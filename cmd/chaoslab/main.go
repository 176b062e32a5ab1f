// Command chaoslab replays real outages against real coordination services.
package main

import (
	"fmt"
	"os"

	// The kubernetes placement is linked here, not in harness/plugins
	// yet: the systems' contract test runs every generic fault on every
	// linked placement, and kill, replace and disconnect are not done on
	// it yet (docs/kubernetes.md).
	_ "github.com/chaoslab/chaoslab/harness/placement/kubernetes"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaoslab:", err)
		os.Exit(exitCode(err))
	}
}
