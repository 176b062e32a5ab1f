// Command genschema writes the JSON Schema of scenario files and the
// plug-in reference, generated from the Go types and the registered
// plug-ins by scenarios.Schema and scenarios.Reference. Run it with
// `go generate ./scenarios` (from the scenarios folder).
package main

import (
	"flag"
	"fmt"
	"os"

	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/scenarios"
)

func main() {
	schema := flag.String("o", "schema.json", "schema file to write")
	ref := flag.String("ref", "reference.md", "reference file to write")
	flag.Parse()
	if err := write(*schema, scenarios.Schema); err != nil {
		fail(err)
	}
	if err := write(*ref, scenarios.Reference); err != nil {
		fail(err)
	}
}

func write(path string, gen func(srcRoot string) ([]byte, error)) error {
	b, err := gen("..")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "genschema:", err)
	os.Exit(1)
}
