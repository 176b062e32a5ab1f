package scenarios

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// schema.json is what editors use to check and complete scenario files
// (see README.md). It is generated from the Go types; TestSchemaUpToDate
// fails when it is stale.

//go:generate go run ./internal/genschema -o schema.json

// SchemaID is the $id of schema.json.
const SchemaID = "https://github.com/chaoslab/chaoslab/scenarios/schema.json"

// DurationPattern is what schema.json accepts for a duration: a Go duration
// string such as 10s, 1m30s or 250ms (or 0). The loader uses
// time.ParseDuration, which also takes signs and leading dots.
const DurationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$`

// The field comments of the format become the schema's descriptions.
//
//go:embed scenario.go
var formatSource []byte

// Schema returns the JSON Schema (draft 2020-12) of a scenario file, the
// content of schema.json. It mirrors the strict loader: property names are
// the YAML keys, every object rejects unknown keys, durations are strings,
// names of faults and metrics are enumerated from the loader's lists, and a
// variant's workload has the workload's properties with none required.
func Schema() ([]byte, error) {
	docs, err := fieldDocs()
	if err != nil {
		return nil, err
	}
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		ExpandedStruct:             true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			switch t {
			case durationType:
				return &jsonschema.Schema{Type: "string", Pattern: DurationPattern}
			case nodeType: // Variant.Workload, a partial Workload
				return &jsonschema.Schema{Ref: "#/$defs/WorkloadOverride"}
			}
			return nil
		},
		LookupComment: func(t reflect.Type, field string) string {
			if t.PkgPath() != reflect.TypeOf(Scenario{}).PkgPath() {
				return ""
			}
			return docs[t.Name()+"."+field]
		},
	}
	s := r.Reflect(&Scenario{})
	s.ID = SchemaID
	s.Title = "chaoslab scenario"
	defs := s.Definitions

	prop := func(def *jsonschema.Schema, name string) *jsonschema.Schema {
		p, ok := def.Properties.Get(name)
		if !ok {
			panic("schema: no property " + name)
		}
		return p
	}
	def := func(name string) *jsonschema.Schema {
		d, ok := defs[name]
		if !ok {
			panic("schema: no definition " + name)
		}
		return d
	}
	strs := func(l []string) []any {
		out := make([]any, len(l))
		for i, v := range l {
			out[i] = v
		}
		return out
	}

	// Lists the loader owns. The struct tags spell "==" as "enum==", which
	// the tag parser reads as "=", so the operators come from opNames too.
	prop(s, "expect").AdditionalProperties.Enum = strs(verdictNames)
	prop(def("FaultStep"), "fault").Enum = strs(faultNames)
	for _, d := range []string{"Hypothesis", "Comparison"} {
		prop(def(d), "op").Enum = strs(opNames)
	}
	for _, d := range []string{"Hypothesis", "Comparison", "Evidence"} {
		m := prop(def(d), "metric")
		m.Enum = strs(MetricNames())
		m.Description = "A metric name (see README.md, Metrics)."
	}

	// A variant's workload overrides fields of the scenario's workload, so
	// nothing in it is required, at any depth.
	if err := addPartial(defs, "Workload", "WorkloadOverride"); err != nil {
		return nil, err
	}
	defs["WorkloadOverride"].Description = "Fields of the scenario's workload that this variant sets; the others keep their values."

	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	// encoding/json escapes <, > and & for HTML; the operators read better plain.
	plain := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(out))
	return []byte(plain + "\n"), nil
}

// addPartial adds defs[to], a copy of defs[from] with nothing required and
// every object property pointing to a partial copy in turn.
func addPartial(defs jsonschema.Definitions, from, to string) error {
	b, err := json.Marshal(defs[from])
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	var cp jsonschema.Schema
	if err := json.Unmarshal(b, &cp); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	cp.Required = nil
	defs[to] = &cp
	for pair := cp.Properties.Oldest(); pair != nil; pair = pair.Next() {
		ref, ok := strings.CutPrefix(pair.Value.Ref, "#/$defs/")
		if !ok {
			continue
		}
		if len(defs[ref].Required) == 0 {
			continue // already partial
		}
		if _, done := defs[ref+"Override"]; !done {
			if err := addPartial(defs, ref, ref+"Override"); err != nil {
				return err
			}
		}
		pair.Value.Ref = "#/$defs/" + ref + "Override"
	}
	return nil
}

// fieldDocs reads the doc comments of the format's types: "Type." for a
// type, "Type.Field" for a field. A field comment that starts with the Go
// field name starts with the YAML key instead.
func fieldDocs() (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "scenario.go", formatSource, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	text := func(cg *ast.CommentGroup) string { return strings.Join(strings.Fields(cg.Text()), " ") }
	docs := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			docs[ts.Name.Name+"."] = text(doc)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				c := fld.Doc
				if c == nil {
					c = fld.Comment
				}
				if c == nil {
					continue
				}
				for _, name := range fld.Names {
					txt := text(c)
					if key := yamlKey(fld); key != "" {
						if rest, ok := strings.CutPrefix(txt, name.Name+" "); ok {
							txt = key + " " + rest
						}
					}
					docs[ts.Name.Name+"."+name.Name] = txt
				}
			}
		}
	}
	return docs, nil
}

func yamlKey(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`"))
	name, _, _ := strings.Cut(tag.Get("yaml"), ",")
	return name
}
