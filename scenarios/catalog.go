package scenarios

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// The plug-ins as a program can describe them without the source tree:
// schema.json is built into the binary (go generate keeps it current), and
// the descriptions the schema and reference.md take from Go comments are
// read back from it. Reference renders the same values as markdown.

//go:embed schema.json
var schemaJSON []byte

// SchemaJSON returns schema.json as built into the binary.
func SchemaJSON() []byte { return bytes.Clone(schemaJSON) }

// Setting is one key of a plug-in's settings: its yaml path below the
// settings, its default and what it means.
type Setting struct {
	Key     string `json:"key"`
	Default any    `json:"default,omitempty"`
	Doc     string `json:"doc,omitempty"`
}

// FaultDoc is a registered fault: what it does and its parameters.
type FaultDoc struct {
	Name   string    `json:"name"`
	Doc    string    `json:"doc"`
	Params []Setting `json:"params"`
}

// MetricDoc is a declared metric: its unit, how it is computed (a
// reducer's canonical name, or "computed" by the plug-in) and its meaning.
type MetricDoc struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	How  string `json:"how"`
	Doc  string `json:"doc"`
}

// Faults describes every registered fault, from the schema built in.
func Faults() ([]FaultDoc, error) {
	params, err := faultParams(schemaJSON)
	if err != nil {
		return nil, err
	}
	var out []FaultDoc
	for _, name := range faults.Names() {
		p, ok := params[name]
		if !ok {
			// Registered after schema.json was generated: no comments.
			p = settingsSchema(reflector(), faults.MustNew(name))
		}
		out = append(out, faultDoc(name, p))
	}
	return out, nil
}

// faultParams finds each fault's params schema in a schema.json: the
// FaultStep's branches, "when fault is X, params are X's".
func faultParams(doc []byte) (map[string]*jsonschema.Schema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(doc, &s); err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	step, ok := s.Definitions["FaultStep"]
	if !ok {
		return nil, fmt.Errorf("read schema: no FaultStep definition")
	}
	out := map[string]*jsonschema.Schema{}
	for _, b := range step.AllOf {
		if b.If == nil || b.Then == nil || b.If.Properties == nil || b.Then.Properties == nil {
			continue
		}
		f, ok1 := b.If.Properties.Get("fault")
		p, ok2 := b.Then.Properties.Get("params")
		if name, isStr := f.Const.(string); ok1 && ok2 && isStr {
			out[name] = p
		}
	}
	return out, nil
}

func faultDoc(name string, params *jsonschema.Schema) FaultDoc {
	return FaultDoc{Name: name, Doc: strings.TrimSpace(params.Description), Params: settingRows(params, "")}
}

// settingRows lists a settings schema's properties, nested ones by path.
func settingRows(s *jsonschema.Schema, prefix string) []Setting {
	if s.Properties == nil {
		return nil
	}
	var out []Setting
	for pr := s.Properties.Oldest(); pr != nil; pr = pr.Next() {
		key, v := prefix+pr.Key, pr.Value
		if v.Properties != nil && v.Properties.Len() > 0 {
			out = append(out, settingRows(v, key+".")...)
			continue
		}
		out = append(out, Setting{Key: key, Default: v.Default, Doc: strings.Join(strings.Fields(v.Description), " ")})
	}
	return out
}

// MetricDocs describes metric declarations, sorted by name.
func MetricDocs(defs []lab.MetricDef) []MetricDoc {
	out := make([]MetricDoc, 0, len(defs))
	for _, m := range defs {
		how := "computed"
		if m.Reducer != nil {
			how = m.Reducer.Name()
		}
		out = append(out, MetricDoc{Name: m.Name, Unit: m.Unit, How: how, Doc: strings.Join(strings.Fields(m.Doc), " ")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
