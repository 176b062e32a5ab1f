package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/seeds"
)

// myCase is a case record of a user's own whose one source has no
// archived copy.
const myCase = `id: MY-0001
organisation: Example Corp
date: "2024-03-01"
title: A reader fleet stalls with its ZooKeeper leader
systems: [zookeeper]
lab_system: zookeeper
trigger: The leader ran at full CPU for a quarter of an hour.
chain: [The leader stopped answering., Every reader reconnected at once.]
numbers:
  - name: stall_duration
    value: 15
    unit: minutes
    text: How long the leader stalled.
sources:
  - url: https://example.com/postmortem
    kind: pull-request
summary: Readers reconnected at once when the leader stalled.
`

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// A folder of --cases that also holds a scenario: the scenario is skipped
// with a line that says so; --cases naming the scenario itself is refused
// in a line.
func TestCasesFolderWithAScenario(t *testing.T) {
	s := builtinScenario(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "my-0001.yaml"), myCase)
	// The scenario's evidence names its own record's numbers, which
	// MY-0001 does not have.
	noNumbers := regexp.MustCompile(`(?m)^    number: .*\n`)
	scen := writeScenario(t, dir, s, func(y string) string {
		return noNumbers.ReplaceAllString(strings.Replace(y, "\ncase: "+s.Case, "\ncase: MY-0001", 1), "")
	})

	out, errOut, code := chaoslab(t, "list", "--cases", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "MY-0001")
	require.Contains(t, errOut, "note: --cases "+scen+": skipped: a scenario, not a case record")
	require.NotContains(t, errOut, "not found in type")

	out, errOut, code = chaoslab(t, "validate", "--cases", dir, scen)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "("+s.ID+")")

	_, errOut, code = chaoslab(t, "list", "--cases", scen)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, scen+" is a scenario, not a case record")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, errOut)
}

// A scenario naming a case nobody gave is told the two ways to give one.
func TestUnknownCaseSaysHowToGiveOne(t *testing.T) {
	s := builtinScenario(t)
	file := writeScenario(t, t.TempDir(), s, func(y string) string { return strings.Replace(y, "\ncase: "+s.Case, "\ncase: ACME-1", 1) })
	_, errOut, code := chaoslab(t, "validate", file)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, `unknown case "ACME-1"`)
	require.Contains(t, errOut, "--cases DIR")
	require.Contains(t, errOut, "case: path.yaml")
}

// validate checks a case record's file as one, and notes each source
// without an archived copy, with --cases as with a file.
func TestValidateCaseRecords(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "mine.yaml"), myCase)

	out, errOut, code := chaoslab(t, "validate", "--cases", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ok  5 built-in case records")
	require.Contains(t, out, "ok  "+file+" (MY-0001)")
	require.Contains(t, out, "note: "+file+": sources[0]: https://example.com/postmortem has no archived copy")

	out, _, code = chaoslab(t, "validate", file)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ok  "+file+" (MY-0001)")
	require.Contains(t, out, "note: ")

	bad := writeFile(t, filepath.Join(t.TempDir(), "bad.yaml"), strings.Replace(myCase, "value: 15", "value: 10-20", 1))
	out, errOut, code = chaoslab(t, "validate", bad, "-o", "json")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, `numbers[0].value: want a number, got "10-20"`)
	res := decode[[]validation](t, out)
	require.Len(t, res, 1)
	require.Equal(t, []problem{{File: bad, Line: 11, Field: "numbers[0].value",
		Message: `want a number, got "10-20": for a range, give one figure (its middle, say) with approx: true, and the published words in text`}}, res[0].Problems)

	out, errOut, code = chaoslab(t, "validate", "--cases", filepath.Dir(bad), "-o", "json")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, bad+`: numbers[0].value: want a number`)
	res = decode[[]validation](t, out)
	require.Len(t, res, 1, "the --cases problem alone, not once per scenario")
	require.Equal(t, filepath.Dir(bad), res[0].File)
	require.Equal(t, "numbers[0].value", res[0].Problems[0].Field)
	require.Equal(t, 11, res[0].Problems[0].Line)
}

// show takes a case record's file; run is told a record is not a
// scenario.
func TestShowACaseRecordFile(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "mine.yaml"), myCase)
	out, errOut, code := chaoslab(t, "show", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "MY-0001  A reader fleet stalls")
	require.Contains(t, out, "[pull-request] https://example.com/postmortem")

	bad := writeFile(t, filepath.Join(t.TempDir(), "bad.yaml"), strings.Replace(myCase, "title: A reader", "title: [A reader", 1))
	_, errOut, code = chaoslab(t, "show", bad)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, bad)
	require.NotContains(t, errOut, "not a case record or a scenario")

	_, err := findScenario(file)
	require.ErrorContains(t, err, file+" is a case record, not a scenario: chaoslab new scenario --case "+file)
	require.Equal(t, exitInput, exitCode(err))
}

// schema case prints the case records' schema; schema alone (or schema
// scenario) the scenarios' still.
func TestSchemaCase(t *testing.T) {
	out, _, code := chaoslab(t, "schema", "case")
	require.Equal(t, 0, code)
	want, err := os.ReadFile(filepath.Join("..", "..", "seeds", "schema.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), out)

	scen, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "schema.json"))
	require.NoError(t, err)
	for _, args := range [][]string{{"schema"}, {"schema", "scenario"}} {
		out, _, code = chaoslab(t, args...)
		require.Equal(t, 0, code)
		require.Equal(t, string(scen), out, args)
	}
	_, _, code = chaoslab(t, "schema", "cases")
	require.Equal(t, exitInput, code)
	require.Equal(t, []string{"scenario", "case"}, complete(t, "schema", ""))
}

// new case writes a commented record that parses; filled in, it
// validates, and new scenario writes a scenario for it that validates.
func TestNewCase(t *testing.T) {
	out, _, code := chaoslab(t, "new", "case", "ACME-2024-03")
	require.Equal(t, 0, code)
	rec, err := seeds.Parse("stdout.yaml", []byte(out))
	require.NoError(t, err)
	require.Equal(t, "ACME-2024-03", rec.ID)

	dir := t.TempDir()
	file := filepath.Join(dir, "acme.yaml")
	_, errOut, code := chaoslab(t, "new", "case", "ACME-2024-03", "-o", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "wrote "+file)
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, out, string(written))
	_, errOut, code = chaoslab(t, "new", "case", "ACME-2024-03", "-o", file)
	require.Equal(t, exitInput, code, "a file that exists is kept")
	require.Contains(t, errOut, "exists")

	_, errOut, code = chaoslab(t, "validate", file)
	require.Equal(t, exitInput, code, "placeholders left")
	require.Contains(t, errOut, file+": organisation: required (line ")

	filled := strings.NewReplacer(
		`organisation: ""`, `organisation: Acme`,
		`date: ""`, `date: "2024-03-01"`,
		`title: ""`, `title: A stalled leader took the readers down`,
		`systems: [""]`, `systems: [zookeeper]`,
		`lab_system: ""`, `lab_system: zookeeper`,
		`trigger: ""`, `trigger: The leader stalled.`,
		`    event: ""`, `    event: The leader stalls.`,
		`  - name: ""`, `  - name: stall_duration`,
		`    unit: ""`, `    unit: minutes`,
		`    text: ""`, `    text: How long the leader stalled.`,
		`  - ""`, `  - The leader stopped answering.`,
		`  - url: ""`, `  - url: https://example.com/postmortem`,
		`summary: ""`, `summary: A stalled leader took the readers down.`,
	).Replace(out)
	writeFile(t, file, filled)
	out, errOut, code = chaoslab(t, "validate", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ok  "+file+" (ACME-2024-03)")
	require.Contains(t, out, "note: "+file+": sources[0]: https://example.com/postmortem has no archived copy")

	scen := filepath.Join(dir, "acme-scenario.yaml")
	_, errOut, code = chaoslab(t, "new", "scenario", "--case", file, "--kind", "zk-tree-mirror", "-o", scen)
	require.Equal(t, 0, code, errOut)
	_, errOut, code = chaoslab(t, "validate", scen)
	require.Equal(t, 0, code, errOut)
	out, errOut, code = chaoslab(t, "--cases", dir, "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ACME-2024-03")
	require.Contains(t, errOut, "note: --cases "+scen+": skipped: a scenario, not a case record")

	for _, id := range []string{"IL-0587", "il-0587", "has space"} {
		_, errOut, code = chaoslab(t, "new", "case", id)
		require.Equal(t, exitInput, code, id)
		require.Contains(t, errOut, "new case: ", id)
	}
	_, errOut, code = chaoslab(t, "--cases", dir, "new", "case", "acme-2024-03")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "is that of "+file)
}
