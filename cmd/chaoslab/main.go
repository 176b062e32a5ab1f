// Command chaoslab replays real outages against real coordination services.
package main

import (
	"fmt"
	"os"

	_ "github.com/chaoslab/chaoslab/harness/plugins"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaoslab:", err)
		os.Exit(exitCode(err))
	}
}
