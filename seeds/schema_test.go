package seeds_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/seeds"
	"github.com/chaoslab/chaoslab/seeds/internal/caseschema"
)

func TestSchemaUpToDate(t *testing.T) {
	want, err := caseschema.Schema(".")
	require.NoError(t, err)
	got, err := os.ReadFile("schema.json")
	require.NoError(t, err, "schema.json is missing: run `go generate ./seeds`")
	require.Equal(t, string(want), string(got), "schema.json is out of date: run `go generate ./seeds`")
	require.Equal(t, got, seeds.SchemaJSON(), "the binary's copy")
}

func TestReferenceUpToDate(t *testing.T) {
	want, err := caseschema.Reference(".")
	require.NoError(t, err)
	got, err := os.ReadFile("reference.md")
	require.NoError(t, err, "reference.md is missing: run `go generate ./seeds`")
	require.Equal(t, string(want), string(got), "reference.md is out of date: run `go generate ./seeds`")
}

// The reference names every key of every type of a record, each with a
// meaning, and every allowed kind.
func TestReferenceNamesEveryField(t *testing.T) {
	ref, err := os.ReadFile("reference.md")
	require.NoError(t, err)
	for _, k := range append(append(append([]string{}, seeds.SourceKinds...), seeds.ResponderKinds...), seeds.LabSystems...) {
		require.Contains(t, string(ref), "`"+k+"`", k)
	}
	for _, path := range recordKeys(reflect.TypeOf(seeds.Record{}), "") {
		line := rowOf(string(ref), path)
		require.NotEmpty(t, line, "reference.md has no row for %s", path)
		cells := strings.Split(line, " | ")
		require.Len(t, cells, 5, line)
		require.Greater(t, len(strings.TrimSuffix(cells[4], " |")), 10, "%s has a meaning", path)
	}
}

// recordKeys are the key paths of a record type, as the reference writes
// them (numbers[].value).
func recordKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || key == "" {
			continue
		}
		out = append(out, prefix+key)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, recordKeys(ft, prefix+key+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, recordKeys(ft.Elem(), prefix+key+"[].")...)
		}
	}
	return out
}

// rowOf is the reference's table row for a key path.
func rowOf(ref, path string) string {
	for _, l := range strings.Split(ref, "\n") {
		if strings.HasPrefix(l, "| `"+path+"` |") {
			return l
		}
	}
	return ""
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(seeds.SchemaJSON()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	return sch
}

// yamlToJSON turns a record's YAML into the JSON value an editor checks
// (YAML 1.2: an unquoted date is a string).
func yamlToJSON(t *testing.T, text []byte) any {
	t.Helper()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(text, &doc))
	b, err := json.Marshal(plain(doc.Content[0]))
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return inst
}

func plain(n *yaml.Node) any {
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = plain(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, plain(c))
		}
		return l
	case yaml.AliasNode:
		return plain(n.Alias)
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		f, _ := strconv.ParseFloat(n.Value, 64)
		return f
	case "!!bool":
		return n.Value == "true"
	case "!!null":
		return nil
	}
	return n.Value
}

func TestSchemaValidatesBuiltins(t *testing.T) {
	sch := compileSchema(t)
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, sch.Validate(yamlToJSON(t, text)), f)
	}
	require.NoError(t, sch.Validate(yamlToJSON(t, []byte(record))), "record")
}

// record is a valid record with every kind of key; tests edit it.
const record = `id: MY-0001
organisation: Example Corp
date: "2024-03-01"
title: A reader fleet stalls with its ZooKeeper leader
systems: [zookeeper]
lab_system: zookeeper
trigger: The leader ran at full CPU for a quarter of an hour.
timeline:
  - at: "09:10 UTC"
    event: The leader stalls.
    actions:
      - kind: leader-election
        until: "09:30 UTC"
        source: The write-up says they forced an election.
  - at: ""
    date: "2024-03-02"
    event: A fix ships.
numbers:
  - name: stall_duration
    value: 15
    unit: minutes
    approx: true
    text: How long the leader stalled.
chain: [The leader stopped answering., Every reader reconnected at once.]
sources:
  - url: https://example.com/postmortem
    kind: postmortem
    archived: https://web.archive.org/web/2024/https://example.com/postmortem
summary: Readers reconnected at once when the leader stalled.
training:
  cause: A stalled leader.
  decoys:
    - text: The network.
  responders:
    - kind: stop-clients
      text: They stopped the clients.
`

// The schema accepts what the loader accepts and rejects what it
// rejects, where JSON Schema can say it.
func TestSchemaAgreesWithLoader(t *testing.T) {
	sch := compileSchema(t)
	check := func(text string) error {
		r, err := seeds.Parse("x.yaml", []byte(text))
		if err != nil {
			return err
		}
		return r.Validate()
	}
	edit := func(old, new string) string {
		require.Contains(t, record, old)
		return strings.Replace(record, old, new, 1)
	}
	good := map[string]string{
		"no archived copy":    edit("    archived: https://web.archive.org/web/2024/https://example.com/postmortem\n", ""),
		"a pull request":      edit("kind: postmortem", "kind: pull-request"),
		"a mailing-list post": edit("kind: postmortem", "kind: mailing-list"),
		"no source kind":      edit("    kind: postmortem\n", ""),
		"PST":                 edit(`at: "09:10 UTC"`, `at: "09:10 PST"`),
		"no training":         record[:strings.Index(record, "training:")],
		"optional prose":      edit("summary:", "region: eu-west-1\nseverity: unknown\nlessons: Bound the queue.\nlab_notes: Replayed on one ensemble.\nremediation: [Restarted.]\naction_items: [Bound it.]\nsummary:"),
	}
	for name, text := range good {
		require.NoError(t, check(text), name)
		require.NoError(t, sch.Validate(yamlToJSON(t, []byte(text))), name)
	}
	bad := map[string]string{
		"unknown top-level key":   edit("title:", "owner: sre\ntitle:"),
		"unknown nested key":      edit("    kind: postmortem\n", "    kind: postmortem\n    mirror: https://example.org\n"),
		"value not a number":      edit("value: 15", "value: 10-20"),
		"value quoted":            edit("value: 15", `value: "15"`),
		"no value":                edit("    value: 15\n", ""),
		"approx not a bool":       edit("approx: true", "approx: yes"),
		"unknown lab system":      edit("lab_system: zookeeper", "lab_system: redis"),
		"unknown source kind":     edit("kind: postmortem", "kind: tweet"),
		"http archived":           edit("archived: https://web", "archived: http://web"),
		"http url":                edit("url: https://example.com/postmortem", "url: http://example.com/postmortem"),
		"bad date":                edit(`date: "2024-03-01"`, `date: "1 March 2024"`),
		"bad timeline date":       edit(`date: "2024-03-02"`, `date: "2024/03/02"`),
		"bad clock":               edit(`at: "09:10 UTC"`, `at: "9:10"`),
		"bad until":               edit(`until: "09:30 UTC"`, `until: "soon"`),
		"unknown action kind":     edit("kind: leader-election", "kind: reboot"),
		"unknown responder kind":  edit("kind: stop-clients", "kind: pray"),
		"name not snake_case":     edit("name: stall_duration", "name: StallDuration"),
		"missing summary":         edit("summary: Readers reconnected at once when the leader stalled.\n", ""),
		"empty title":             edit("title: A reader fleet stalls with its ZooKeeper leader", `title: ""`),
		"no sources":              edit("sources:\n  - url: https://example.com/postmortem\n    kind: postmortem\n    archived: https://web.archive.org/web/2024/https://example.com/postmortem\n", "sources: []\n"),
		"no systems":              edit("systems: [zookeeper]", "systems: []"),
		"systems not a list":      edit("systems: [zookeeper]", "systems: zookeeper"),
		"event missing":           edit("    event: A fix ships.\n", ""),
		"training without cause":  edit("  cause: A stalled leader.\n", ""),
		"action without a source": edit("        source: The write-up says they forced an election.\n", ""),
	}
	for name, text := range bad {
		require.Error(t, check(text), name)
		require.Error(t, sch.Validate(yamlToJSON(t, []byte(text))), name)
	}
}
