package seeds

import (
	"bytes"
	_ "embed"
)

// schema.json is what editors use to check and complete case record
// files, and reference.md documents every key; both are generated from
// the Go types of this package and their comments (internal/caseschema),
// and tests fail when either is stale.

//go:generate go run ./internal/genschema -o schema.json -ref reference.md

//go:embed schema.json
var schemaJSON []byte

// SchemaJSON returns schema.json, the JSON Schema of a case record file,
// as built into the binary.
func SchemaJSON() []byte { return bytes.Clone(schemaJSON) }
