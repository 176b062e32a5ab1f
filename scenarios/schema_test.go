package scenarios_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

func TestSchemaUpToDate(t *testing.T) {
	want, err := scenarios.Schema("..")
	require.NoError(t, err)
	got, err := os.ReadFile("schema.json")
	require.NoError(t, err, "schema.json is missing: run `go generate ./scenarios`")
	require.Equal(t, string(want), string(got), "schema.json is out of date: run `go generate ./scenarios`")
}

// compileSchema compiles schema.json as editors would read it.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("schema.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	sch, err := c.Compile("schema.json")
	require.NoError(t, err)
	return sch
}

// yamlToJSON turns a scenario file into the JSON value the schema checks.
func yamlToJSON(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(text, &v))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return inst
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
	require.NoError(t, sch.Validate(yamlToJSON(t, []byte(small))), "small")
}

// The schema rejects what the loader rejects, where JSON Schema can say it.
func TestSchemaAgreesWithLoader(t *testing.T) {
	acceptOnlyIL0587(t)
	sch := compileSchema(t)

	good := map[string]string{
		"partial nested override": edit(t, small, "      window: 8\n", "      window: 8\n      tree:\n        fanout: [2, 5]\n"),
		"no comparisons":          edit(t, small, small[strings.Index(small, "comparisons:"):strings.Index(small, "expect:")], ""),
		"durations":               edit(t, small, "warmup: 30s", "warmup: 1m30.5s"),
		"another op":              edit(t, small, `op: "=="`, `op: "<"`),
	}
	for name, text := range good {
		_, err := scenarios.Parse("good.yaml", []byte(text))
		require.NoError(t, err, name)
		require.NoError(t, sch.Validate(yamlToJSON(t, []byte(text))), name)
	}

	bad := map[string]string{
		"unknown top-level field":        edit(t, small, "system: zookeeper\n", "system: zookeeper\nowner: sre-team\n"),
		"unknown nested field":           edit(t, small, "fanout: [3, 20]", "fanoutt: [3, 20]"),
		"wrong kind":                     edit(t, small, "clients: 4", `clients: "many"`),
		"number in quotes":               edit(t, small, "clients: 4", `clients: "4"`),
		"bad duration":                   edit(t, small, "session_timeout: 10s", "session_timeout: 10 parsecs"),
		"unknown fault":                  edit(t, small, "fault: pause", "fault: meteor"),
		"bad op":                         edit(t, small, `op: "=="`, `op: "="`),
		"bad verdict":                    edit(t, small, "mitigated: held", "mitigated: fine"),
		"variant workload unknown field": edit(t, small, "window: 8", "windw: 8"),
		"variant workload wrong kind":    edit(t, small, "window: 8", "window: eight"),
		"variant unknown field":          edit(t, small, "    description: A paced walk with 8 requests in flight.\n", "    description: A paced walk.\n    owner: me\n"),
		"missing required":               edit(t, small, "    description: No client is killed for running out of memory.\n", ""),
	}
	// Ranges, targets and metric names are the loader's: the plug-ins
	// check their own values (lab.Settings.Check), which JSON Schema does
	// not repeat.
	for name, text := range bad {
		_, err := scenarios.Parse("bad.yaml", []byte(text))
		require.Error(t, err, name)
		require.Error(t, sch.Validate(yamlToJSON(t, []byte(text))), name)
	}
}

func TestReferenceUpToDate(t *testing.T) {
	want, err := scenarios.Reference("..")
	require.NoError(t, err)
	got, err := os.ReadFile("reference.md")
	require.NoError(t, err, "reference.md is missing: run `go generate ./scenarios`")
	require.Equal(t, string(want), string(got), "reference.md is out of date: run `go generate ./scenarios`")
}

// scenarios/README.md's tables of kinds and faults name every registered
// one, as reference.md does.
func TestReadmeTablesNameEveryPlugin(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	require.GreaterOrEqual(t, len(lab.KindNames()), 5, "the plug-ins are linked")
	require.GreaterOrEqual(t, len(faults.Names()), 14)
	for _, k := range lab.KindNames() {
		if !strings.Contains(string(readme), "| `"+k+"` |") {
			t.Errorf("README.md's kinds table lacks %s", k)
		}
	}
	for _, f := range faults.Names() {
		if !strings.Contains(string(readme), "| `"+f+"` |") {
			t.Errorf("README.md's faults table lacks %s", f)
		}
	}
}
