// Command genschema writes the JSON Schema of case records and their
// reference, generated from the Go types of package seeds by
// caseschema.Schema and caseschema.Reference. Run it with
// `go generate ./seeds` (from the seeds folder).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/chaoslab/chaoslab/seeds/internal/caseschema"
)

func main() {
	schema := flag.String("o", "schema.json", "schema file to write")
	ref := flag.String("ref", "reference.md", "reference file to write")
	flag.Parse()
	for path, gen := range map[string]func(string) ([]byte, error){*schema: caseschema.Schema, *ref: caseschema.Reference} {
		b, err := gen(".")
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "genschema:", err)
			os.Exit(1)
		}
	}
}
