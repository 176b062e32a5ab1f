// Package caseschema generates the JSON Schema of case records
// (seeds/schema.json) and their reference (seeds/reference.md) from the
// Go types of package seeds and their comments, so that the format is
// documented where it is defined. Run it with `go generate ./seeds`.
package caseschema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/chaoslab/chaoslab/seeds"
)

// ID is the $id of schema.json.
const ID = "https://github.com/chaoslab/chaoslab/seeds/schema.json"

// Patterns schema.json checks values against, as Validate does.
const (
	DatePattern  = `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	HTTPSPattern = `^https://`
	// AtPattern is a clock time or nothing (a timeline entry without one).
	AtPattern = `^(([01][0-9]|2[0-3]):[0-5][0-9] (UTC|PST|PDT))?$`
)

// types are the record's types with the key path each is found at.
var types = []struct {
	v    any
	path string
}{
	{seeds.Record{}, ""},
	{seeds.TimelineEntry{}, "timeline[]"},
	{seeds.Action{}, "timeline[].actions[]"},
	{seeds.Number{}, "numbers[]"},
	{seeds.Source{}, "sources[]"},
	{seeds.Training{}, "training"},
	{seeds.Decoy{}, "training.decoys[]"},
	{seeds.Responder{}, "training.responders[]"},
}

// Schema returns schema.json: the JSON Schema (draft 2020-12) of a case
// record file. Property names are the YAML keys, every object rejects
// unknown keys, the kinds are enums and the dates, clock times, names and
// addresses patterns, as Validate checks them. srcDir is the seeds
// folder, whose Go comments become the descriptions.
func Schema(srcDir string) ([]byte, error) {
	s, err := reflectSchema(srcDir)
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	plain := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(out))
	return []byte(plain + "\n"), nil
}

func reflectSchema(srcDir string) (*jsonschema.Schema, error) {
	r := &jsonschema.Reflector{FieldNameTag: "yaml", RequiredFromJSONSchemaTags: true, ExpandedStruct: true}
	if err := r.AddGoComments("github.com/chaoslab/chaoslab/seeds", srcDir); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := r.Reflect(&seeds.Record{})
	s.ID = ID
	s.Title = "chaoslab case record"
	s.Description = "One source incident: what a public write-up says happened. See reference.md and docs/writing-a-case-record.md."
	for _, t := range types {
		def := s
		if t.path != "" {
			def = s.Definitions[reflect.TypeOf(t.v).Name()]
			// "Number is one figure ..." reads "One figure ...".
			if rest, ok := strings.CutPrefix(def.Description, reflect.TypeOf(t.v).Name()+" is "); ok {
				def.Description = strings.ToUpper(rest[:1]) + rest[1:]
			}
		}
		keyDescriptions(def, reflect.TypeOf(t.v))
	}
	defs := s.Definitions
	prop(s, "date").Pattern = DatePattern
	prop(s, "lab_system").Enum = strs(seeds.LabSystems)
	prop(defs["TimelineEntry"], "at").Pattern = AtPattern
	prop(defs["TimelineEntry"], "date").Pattern = DatePattern
	prop(defs["Action"], "kind").Enum = strs(seeds.ActionKinds)
	prop(defs["Action"], "until").Pattern = seeds.ClockPattern
	prop(defs["Number"], "name").Pattern = seeds.NamePattern
	prop(defs["Source"], "url").Pattern = HTTPSPattern
	prop(defs["Source"], "kind").Enum = strs(seeds.SourceKinds)
	prop(defs["Source"], "archived").Pattern = HTTPSPattern
	prop(defs["Responder"], "kind").Enum = strs(seeds.ResponderKinds)
	return s, nil
}

// keyDescriptions makes a field's description read by its YAML key:
// "LabSystem is ..." reads "lab_system is ...".
func keyDescriptions(def *jsonschema.Schema, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || !f.IsExported() {
			continue
		}
		p := prop(def, key)
		for _, verb := range []string{" is ", " are ", " says ", " say ", " quotes ", " marks "} {
			if rest, ok := strings.CutPrefix(p.Description, f.Name+verb); ok {
				p.Description = key + verb + rest
				break
			}
		}
		p.Description = strings.Join(strings.Fields(p.Description), " ")
	}
}

func prop(def *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := def.Properties.Get(name)
	if !ok {
		panic("caseschema: no property " + name)
	}
	return p
}

func strs(l []string) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = v
	}
	return out
}
