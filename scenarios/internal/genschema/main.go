// Command genschema writes the JSON Schema of scenario files, generated from
// the Go types by scenarios.Schema. Run it with `go generate ./scenarios`.
package main

import (
	"flag"
	"fmt"
	"os"

	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/scenarios"
)

func main() {
	out := flag.String("o", "schema.json", "file to write (- for standard output)")
	flag.Parse()
	b, err := scenarios.Schema("..")
	if err == nil {
		if *out == "-" {
			_, err = os.Stdout.Write(b)
		} else {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
}
