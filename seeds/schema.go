package seeds

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
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

//go:embed case-template.yaml.tmpl
var caseTemplate string

// idRe is what Template takes as a case id.
var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Template returns a commented case record for id, to fill in: every key
// with what it means, the required ones empty (""). It parses as it is;
// Validate names what is left to fill in.
func Template(id string) ([]byte, error) {
	if !idRe.MatchString(id) {
		return nil, fmt.Errorf("case id %q: want letters, digits, '-', '.' or '_', starting with a letter or digit (ACME-2024-03)", id)
	}
	return []byte(strings.ReplaceAll(caseTemplate, "{{ID}}", id)), nil
}
