package scenarios

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// schema.json is what editors use to check and complete scenario files
// (see README.md). It is generated from the Go types of the format and of
// every registered plug-in; TestSchemaUpToDate fails when it is stale.

//go:generate go run ./internal/genschema -o schema.json

// SchemaID is the $id of schema.json.
const SchemaID = "https://github.com/chaoslab/chaoslab/scenarios/schema.json"

// DurationPattern is what schema.json accepts for a duration: a Go duration
// string such as 10s, 1m30s or 250ms (or 0). The loader uses
// time.ParseDuration, which also takes signs and leading dots.
const DurationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$`

// Schema returns the JSON Schema (draft 2020-12) of a scenario file, the
// content of schema.json, for the plug-ins linked in. It mirrors the strict
// loader: property names are the YAML keys, every object rejects unknown
// keys, durations are strings; the workload has one branch per workload
// kind, the topology one property per system, a fault step's params one
// branch per fault, each with the plug-in's defaults. srcRoot is the
// repository's folder, whose Go comments become the descriptions.
func Schema(srcRoot string) ([]byte, error) {
	r := reflector()
	if err := r.AddGoComments("github.com/chaoslab/chaoslab/scenarios", srcRoot); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s := r.Reflect(&Scenario{})
	s.ID = SchemaID
	s.Title = "chaoslab scenario"
	defs := s.Definitions
	prop(s, "expect").AdditionalProperties.Enum = strs(verdictNames)
	prop(s, "workload").OneOf = kindBranches(r, true)
	prop(s, "topology").Properties = systemProps(r)
	prop(s, "topology").AdditionalProperties = jsonschema.FalseSchema
	variant := defs["Variant"]
	prop(variant, "workload").AnyOf = kindBranches(r, false)
	prop(variant, "topology").Properties = systemProps(r)
	prop(variant, "topology").AdditionalProperties = jsonschema.FalseSchema
	step := defs["FaultStep"]
	prop(step, "fault").Enum = strs(faults.Names())
	step.AllOf = faultBranches(r)
	for _, d := range []string{"Hypothesis", "Comparison"} {
		prop(defs[d], "op").Enum = strs(opNames)
	}
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	// encoding/json escapes <, > and & for HTML; the operators read better plain.
	plain := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(out))
	return []byte(plain + "\n"), nil
}

func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		ExpandedStruct:             true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			switch t {
			case durationType:
				return &jsonschema.Schema{Type: "string", Pattern: DurationPattern}
			case nodeType:
				return &jsonschema.Schema{}
			}
			return nil
		},
	}
}

// settingsSchema is a plug-in's settings as an object schema, nothing
// required, with the values of v as defaults.
func settingsSchema(r *jsonschema.Reflector, v any) *jsonschema.Schema {
	rr := *r
	rr.DoNotReference = true
	s := rr.Reflect(v)
	s.Version, s.ID = "", ""
	clearRequired(s)
	setDefaults(s, reflect.ValueOf(v))
	return s
}

func clearRequired(s *jsonschema.Schema) {
	s.Required = nil
	if s.Properties == nil {
		return
	}
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		clearRequired(p.Value)
		if p.Value.Items != nil {
			clearRequired(p.Value.Items)
		}
	}
}

// setDefaults writes a struct's values into its schema as defaults.
func setDefaults(s *jsonschema.Schema, v reflect.Value) {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || s.Properties == nil {
		return
	}
	for _, f := range yamlFields(v.Type()) {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		p, ok := s.Properties.Get(name)
		if !ok {
			continue
		}
		// "Clients is the number..." reads "clients is the number...".
		if rest, ok := strings.CutPrefix(p.Description, f.Name+" "); ok {
			p.Description = name + " " + rest
		}
		fv := fieldByIndexes(v, f)
		switch {
		case f.Type == durationType:
			p.Default = time.Duration(fv.Int()).String()
		case f.Type.Kind() == reflect.Struct:
			setDefaults(p, fv)
		default:
			p.Default = fv.Interface()
		}
	}
}

// fieldByIndexes finds an (inline-promoted) field by its name.
func fieldByIndexes(v reflect.Value, f reflect.StructField) reflect.Value {
	return v.FieldByName(f.Name)
}

// kindBranches are the workload kinds: with their kind (whole) or without
// (a variant's partial override).
func kindBranches(r *jsonschema.Reflector, whole bool) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, name := range lab.KindNames() {
		k, _ := lab.GetKind(name)
		s := settingsSchema(r, k.NewSettings())
		s.Title = "workload kind " + name
		if whole {
			kind := &jsonschema.Schema{Const: name, Description: "The workload kind."}
			s.Properties = prepend(s.Properties, "kind", kind)
			s.Required = []string{"kind"}
		}
		out = append(out, s)
	}
	return out
}

func systemProps(r *jsonschema.Reflector) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	props := jsonschema.NewProperties()
	for _, name := range lab.SystemNames() {
		sys, _ := lab.GetSystem(name)
		s := settingsSchema(r, sys.NewTopology())
		s.Title = "topology of " + name
		props.Set(name, s)
	}
	return props
}

// faultBranches: when fault is X, params are X's.
func faultBranches(r *jsonschema.Reflector) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, name := range faults.Names() {
		f, _ := faults.New(name)
		params := settingsSchema(r, f)
		cond := jsonschema.NewProperties()
		cond.Set("fault", &jsonschema.Schema{Const: name})
		then := jsonschema.NewProperties()
		then.Set("params", params)
		out = append(out, &jsonschema.Schema{If: &jsonschema.Schema{Properties: cond}, Then: &jsonschema.Schema{Properties: then}})
	}
	return out
}

func prepend(m *orderedmap.OrderedMap[string, *jsonschema.Schema], k string, v *jsonschema.Schema) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	out := jsonschema.NewProperties()
	out.Set(k, v)
	if m != nil {
		for p := m.Oldest(); p != nil; p = p.Next() {
			out.Set(p.Key, p.Value)
		}
	}
	return out
}

func prop(def *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := def.Properties.Get(name)
	if !ok {
		panic("schema: no property " + name)
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
