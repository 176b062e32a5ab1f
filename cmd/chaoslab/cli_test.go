package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/verdict"
)

// chaoslab runs the CLI as main does and returns its output and exit status.
func chaoslab(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	defer func() { userCases = "" }() // --cases outlives the command
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := execute(context.Background(), root, args)
	if err != nil {
		fmt.Fprintln(&errOut, "chaoslab:", err)
	}
	return out.String(), errOut.String(), exitCode(err)
}

// decode parses a command's JSON output.
func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

func builtinScenario(t *testing.T) *scenarios.Scenario {
	t.Helper()
	all, err := scenarios.Builtin()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	return all[0]
}

func TestVersion(t *testing.T) {
	out, _, code := chaoslab(t, "--version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "chaoslab "), out)
	for _, m := range clientModules {
		require.Contains(t, out, m.name)
	}
	same, _, code := chaoslab(t, "version")
	require.Equal(t, 0, code)
	require.Equal(t, out, same, "--version and version agree")

	out, _, code = chaoslab(t, "version", "-o", "json")
	require.Equal(t, 0, code)
	v := decode[versionInfo](t, out)
	require.NotEmpty(t, v.GoVersion)
}

// The build's information: version, commit, client libraries (replaced
// modules by their replacement).
func TestVersionOf(t *testing.T) {
	v := versionOf(&debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/chaoslab/chaoslab", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		},
		Deps: []*debug.Module{
			{Path: "github.com/go-zookeeper/zk", Version: "v1.0.4"},
			{Path: "go.etcd.io/etcd/client/v3", Version: "v3.6.16", Replace: &debug.Module{Path: "go.etcd.io/etcd/client/v3", Version: "v3.6.17"}},
			{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
		},
	})
	require.Equal(t, "dev", v.Version)
	require.Equal(t, "abc123", v.Commit)
	require.True(t, v.Modified)
	require.Equal(t, map[string]string{"go-zookeeper/zk": "v1.0.4", "etcd client": "v3.6.17"}, v.Libraries)
	text := versionText(v)
	require.Contains(t, text, "abc123 (2026-12-01T10:00:00Z), modified")
	require.Contains(t, text, "consul api")
	require.Contains(t, text, "not linked")

	v = versionOf(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}})
	require.Equal(t, "v1.2.0", v.Version)
	require.Contains(t, versionText(v), "built without VCS information")
}

func TestListJSON(t *testing.T) {
	out, _, code := chaoslab(t, "list", "-o", "json")
	require.Equal(t, 0, code)
	l := decode[listing](t, out)
	s := builtinScenario(t)
	require.NotEmpty(t, l.Cases)
	var found bool
	for _, e := range l.Scenarios {
		if e.ID == s.ID {
			found = true
			require.Equal(t, s.VariantNames(), e.Variants)
			require.Equal(t, s.Kind(), e.Workload)
		}
	}
	require.True(t, found, "list -o json has %s", s.ID)

	text, _, code := chaoslab(t, "list", "--output", "text")
	require.Equal(t, 0, code)
	require.Contains(t, text, s.ID)
	require.Contains(t, text, l.Cases[0].ID)

	_, errOut, code := chaoslab(t, "list", "-o", "yaml")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "want text or json")
}

func TestShowJSON(t *testing.T) {
	s := builtinScenario(t)
	out, _, code := chaoslab(t, "show", strings.ToLower(s.Case), "-o", "json")
	require.Equal(t, 0, code)
	c := decode[struct {
		Case      struct{ ID string }
		Scenarios []string
	}](t, out)
	require.True(t, strings.EqualFold(s.Case, c.Case.ID))
	require.Contains(t, c.Scenarios, s.ID)

	out, _, code = chaoslab(t, "show", strings.ToUpper(s.ID), "-o", "json")
	require.Equal(t, 0, code)
	sc := decode[struct {
		Scenario struct{ ID string }
		YAML     string
	}](t, out)
	require.Equal(t, s.ID, sc.Scenario.ID)
	require.Contains(t, sc.YAML, "id: "+s.ID)

	_, errOut, code := chaoslab(t, "show", "no-such-thing")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "not a case record or a scenario")
}

// writeScenario writes a copy of a built-in scenario with edits.
func writeScenario(t *testing.T, dir string, s *scenarios.Scenario, edit func(string) string) string {
	t.Helper()
	src, err := scenarios.ReadBuiltin(filepath.Base(s.Source))
	require.NoError(t, err)
	path := filepath.Join(dir, "mine.yaml")
	require.NoError(t, os.WriteFile(path, []byte(edit(string(src))), 0o644))
	return path
}

func TestValidateExitAndJSON(t *testing.T) {
	out, _, code := chaoslab(t, "validate")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "case records")

	s := builtinScenario(t)
	out, _, code = chaoslab(t, "validate", strings.ToUpper(s.ID), strings.ToLower(s.Case))
	require.Equal(t, 0, code, "built-in scenarios by id, in any case: %s", out)
	require.Equal(t, 2, strings.Count(out, "("+s.ID+")"), out)

	bad := writeScenario(t, t.TempDir(), s, func(y string) string {
		return strings.Replace(y, "\ncase: "+s.Case, "\ncase: NO-SUCH-CASE", 1)
	})
	out, errOut, code := chaoslab(t, "validate", bad, "-o", "json")
	require.Equal(t, exitInput, code, "a refused scenario is an input error")
	require.Contains(t, errOut, "NO-SUCH-CASE")
	res := decode[[]validation](t, out)
	require.Len(t, res, 1)
	require.False(t, res[0].OK)
	require.NotEmpty(t, res[0].Problems)
	require.Equal(t, "case", res[0].Problems[0].Field)
	require.Positive(t, res[0].Problems[0].Line)
}

// Case records of --cases are known beside the built-in ones: listed,
// shown, and accepted as a scenario's case.
func TestCasesFlag(t *testing.T) {
	s := builtinScenario(t)
	rec, err := caseRecord(s.Case)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join("..", "..", "seeds", strings.ToLower(rec.ID)+".yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	mine := strings.Replace(string(data), "id: "+rec.ID, "id: MY-0001", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "my-0001.yaml"), []byte(mine), 0o644))

	out, _, code := chaoslab(t, "list", "--cases", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "MY-0001")
	out, _, code = chaoslab(t, "show", "my-0001", "--cases", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "MY-0001")

	file := writeScenario(t, t.TempDir(), s, func(y string) string {
		return strings.Replace(y, "\ncase: "+s.Case, "\ncase: MY-0001", 1)
	})
	_, _, code = chaoslab(t, "validate", file)
	require.Equal(t, exitInput, code, "unknown without --cases")
	out, _, code = chaoslab(t, "validate", "--cases", dir, file)
	require.Equal(t, 0, code, out)

	_, errOut, code := chaoslab(t, "list", "--cases", filepath.Join(dir, "missing"))
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "--cases")

	clash := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(clash, "x.yaml"), data, 0o644))
	_, errOut, code = chaoslab(t, "list", "--cases", clash)
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "built-in")
}

func TestExitStatus(t *testing.T) {
	s := builtinScenario(t)
	for _, args := range [][]string{
		{"no-such-command"},
		{"list", "--no-such-flag"},
		{"show"},
		{"run", "no-such-scenario"},
		{"run", s.ID, "--variant", "no-such-variant"},
		{"run", s.ID, "--placement", "moon"},
		{"run", s.ID, "-o", "xml"},
		{"run", s.ID, "--metrics-addr", "0.0.0.0:9477"},
		{"run", s.ID, "--metrics-addr", "127.0.0.1"},
		{"bench", s.ID, "--placement", "moon"},
		{"report", filepath.Join(t.TempDir(), "missing")},
		{"sim", "no-such-model"},
		{"sim", "aws-ebs-2011", "--scale", "galactic"},
		{"metrics", "--workload", "no-such-kind"},
	} {
		_, errOut, code := chaoslab(t, args...)
		require.Equal(t, exitInput, code, "%v: %s", args, errOut)
	}

	require.Equal(t, 0, exitCode(nil))
	require.Equal(t, 1, exitCode(fmt.Errorf("run: %w", errExpectation)))
	require.Equal(t, 2, exitCode(fmt.Errorf("find: %w", errInput(errors.New("no such id")))))
	require.Equal(t, 3, exitCode(errors.New("start zookeeper: timed out")))
	require.Equal(t, 3, exitCode(errLabFailed))
	require.Equal(t, 130, exitCode(errors.Join(errors.New("stop"), errAborted)))
	require.NoError(t, errInput(nil))

	root, _, _ := chaoslab(t, "--help")
	require.Contains(t, root, "Exit status:")
	require.Contains(t, root, "130")
}

// A run's exit: not met is 1, inconclusive because the lab failed is 3,
// interrupted is 130.
func TestOutcome(t *testing.T) {
	met := &reports.Report{Verdict: verdict.Reproduced, ExpectationMet: true}
	notMet := &reports.Report{Verdict: verdict.Violated}
	unmeasured := &reports.Report{Verdict: verdict.Inconclusive, Variants: []*reports.VariantResult{{Name: "vulnerable"}}}
	labFail := &reports.Report{Verdict: verdict.Inconclusive, Variants: []*reports.VariantResult{{Name: "vulnerable", LabError: "zookeeper did not start"}}}
	aborted := &reports.Report{Verdict: verdict.Aborted}
	require.NoError(t, outcome([]*reports.Report{met}, 1))
	require.ErrorIs(t, outcome([]*reports.Report{met, notMet}, 1), errExpectation)
	require.ErrorIs(t, outcome([]*reports.Report{unmeasured}, 1), errExpectation)
	require.ErrorIs(t, outcome([]*reports.Report{labFail}, 1), errLabFailed)
	require.ErrorIs(t, outcome([]*reports.Report{labFail, notMet}, 1), errExpectation, "a run that did not hold outweighs a lab failure")
	require.ErrorIs(t, outcome([]*reports.Report{notMet, aborted}, 1), errAborted)
	// --min-rate: 9 of 10 met is enough for 0.9, not for 0.95.
	nine := []*reports.Report{notMet}
	for range 9 {
		nine = append(nine, met)
	}
	require.NoError(t, outcome(nine, 0.9))
	require.ErrorIs(t, outcome(nine, 0.95), errExpectation)
	require.ErrorIs(t, outcome([]*reports.Report{notMet, aborted, met}, 0.5), errAborted, "an interrupted run is never a pass")
	require.ErrorIs(t, rejudged(aborted), errExpectation, "re-judging an interrupted run is not an interruption")
}

// writeReport writes a harness report of a built-in scenario whose
// variants measured nothing; labError is set on the first.
func writeReport(t *testing.T, s *scenarios.Scenario, labError string) string {
	t.Helper()
	src, err := scenarios.ReadBuiltin(filepath.Base(s.Source))
	require.NoError(t, err)
	r := &reports.Report{Schema: reports.SchemaVersion, RunID: "t", Scenario: s.Info(), Spec: new(s.Spec()), ScenarioYAML: string(src), Backend: "local"}
	for _, v := range s.VariantNames() {
		r.Variants = append(r.Variants, &reports.VariantResult{Name: v})
	}
	r.Variants[0].LabError = labError
	b, err := json.Marshal(r)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644))
	return dir
}

func TestReportExitAndJSON(t *testing.T) {
	s := builtinScenario(t)
	dir := writeReport(t, s, "")
	out, _, code := chaoslab(t, "report", dir, "-o", "json")
	require.Equal(t, exitExpectation, code, "re-judged and not met")
	runs := decode[[]struct {
		Scenario       string
		Verdict        string
		ExpectationMet bool `json:"expectation_met"`
		Variants       []struct{ Name, Verdict string }
	}](t, out)
	require.Len(t, runs, 1)
	require.Equal(t, s.ID, runs[0].Scenario)
	require.Equal(t, string(verdict.Inconclusive), runs[0].Verdict)
	require.False(t, runs[0].ExpectationMet)
	require.Len(t, runs[0].Variants, len(s.VariantNames()))

	_, _, code = chaoslab(t, "report", writeReport(t, s, "zookeeper did not start"))
	require.Equal(t, exitLab, code, "inconclusive because the lab failed")
}

// A model's report re-judged: met is 0. sim takes ids in any case.
func TestSimAndReportMet(t *testing.T) {
	list, _, code := chaoslab(t, "sim", "-o", "json")
	require.Equal(t, 0, code)
	models := decode[[]model](t, list)
	require.NotEmpty(t, models)
	require.Contains(t, complete(t, "sim", ""), models[0].ID)

	out := t.TempDir()
	text, errOut, code := chaoslab(t, "sim", "AWS-EBS-2011", "--out", out)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, text, "REPRODUCED")
	dirs, err := filepath.Glob(filepath.Join(out, "*", "report.json"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	js, _, code := chaoslab(t, "report", filepath.Dir(dirs[0]), "-o", "json")
	require.Equal(t, 0, code)
	require.Contains(t, js, `"expectation_met": true`)
}

// __complete is what the shells' completion scripts call.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	out, _, code := chaoslab(t, append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, code)
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, ":") {
			words = append(words, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return words
}

func TestCompletion(t *testing.T) {
	s := builtinScenario(t)
	rec, err := caseRecord(s.Case)
	require.NoError(t, err)
	for _, cmd := range []string{"run", "show", "bench", "validate"} {
		got := complete(t, cmd, "")
		require.Contains(t, got, s.ID, cmd)
		require.Contains(t, got, rec.ID, "%s: case ids as list prints them", cmd)
	}
	require.Equal(t, []string{s.ID}, complete(t, "run", s.ID[:len(s.ID)-2]))
	require.Equal(t, append(s.VariantNames(), "both"), complete(t, "run", strings.ToLower(s.Case), "--variant", ""))
	first := s.VariantNames()[0]
	for _, v := range complete(t, "run", s.ID, "--variant", first+",") {
		require.True(t, strings.HasPrefix(v, first+","), v)
		require.NotEqual(t, first+","+first, v, "not twice")
	}
	places := append([]string{"auto"}, lab.PlacementNames()...)
	require.Equal(t, places, complete(t, "run", s.ID, "--placement", ""))
	require.Equal(t, places, complete(t, "run", s.ID, "--backend", ""))
	require.Equal(t, places, complete(t, "bench", s.ID, "--placement", ""))
	require.Equal(t, lab.KindNames(), complete(t, "metrics", "--workload", ""))
	require.Equal(t, []string{"text", "json"}, complete(t, "list", "-o", ""))
	require.Contains(t, complete(t, "sim", ""), "AWS-EBS-2011") // as list prints it
	require.Contains(t, complete(t, "report", "x", "--scenario", ""), s.ID)

	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, _, code := chaoslab(t, "completion", shell)
		require.Equal(t, 0, code)
		require.Contains(t, out, "chaoslab", shell)
	}
}

func TestFaults(t *testing.T) {
	out, _, code := chaoslab(t, "faults")
	require.Equal(t, 0, code)
	for _, name := range faults.Names() {
		require.Regexp(t, "(?m)^"+regexp.QuoteMeta(name)+"$", out)
	}

	js, _, code := chaoslab(t, "faults", "-o", "json")
	require.Equal(t, 0, code)
	infos := decode[[]faultInfo](t, js)
	require.Len(t, infos, len(faults.Names()))
	docs, err := scenarios.Faults()
	require.NoError(t, err)
	for i, f := range infos {
		require.Equal(t, docs[i].Name, f.Name)
		require.NotEmpty(t, f.Doc, "%s: its doc comment, from schema.json", f.Name)
		require.NotEmpty(t, f.Targets, "%s acts on something", f.Name)
		for _, tg := range f.Targets {
			require.NotEmpty(t, tg.Placements, f.Name)
		}
	}
	// Every generic fault acts on every system's members on every
	// placement: no hole in the matrix.
	byName := map[string]faultInfo{}
	for _, f := range infos {
		byName[f.Name] = f
	}
	for _, name := range faults.Generic {
		systems := map[string][]string{}
		for _, tg := range byName[name].Targets {
			if tg.System != "" {
				systems[tg.System] = tg.Placements
			}
		}
		for _, sys := range lab.SystemNames() {
			require.ElementsMatch(t, lab.PlacementNames(), systems[sys], "%s on %s members", name, sys)
		}
	}
}

func TestMetrics(t *testing.T) {
	out, _, code := chaoslab(t, "metrics")
	require.Equal(t, 0, code)
	for _, m := range lab.PipelineMetrics() {
		require.Contains(t, out, m.Name)
	}
	for _, r := range lab.Reduces {
		require.Contains(t, out, r+"(SERIES")
	}
	for _, name := range lab.KindNames() {
		require.Contains(t, out, "workload "+name)
	}

	kinds := lab.KindNames()
	mine, other := kinds[0], kinds[len(kinds)-1]
	require.NotEqual(t, mine, other, "two workload kinds registered")
	js, _, code := chaoslab(t, "metrics", "--workload", mine, "-o", "json")
	require.Equal(t, 0, code)
	doc := decode[metricsDoc](t, js)
	k, _ := lab.GetKind(mine)
	var names []string
	for _, g := range doc.Groups {
		names = append(names, g.Name)
		require.NotEqual(t, "workload "+other, g.Name)
	}
	require.Contains(t, names, "pipeline")
	require.Contains(t, names, "workload "+mine)
	for _, sys := range k.Systems() {
		require.Contains(t, names, "system "+sys)
	}
	for _, g := range doc.Groups {
		for _, m := range g.Metrics {
			require.NotEmpty(t, m.Unit, "%s has a unit", m.Name)
		}
	}
}

func TestSchema(t *testing.T) {
	out, _, code := chaoslab(t, "schema")
	require.Equal(t, 0, code)
	want, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "schema.json"))
	require.NoError(t, err)
	require.Equal(t, string(want), out)
}

// Every shipped scenario names the schema on its first line, by a path
// from its folder that reaches scenarios/schema.json.
func TestScenarioModelines(t *testing.T) {
	const prefix = "# yaml-language-server: $schema="
	var files []string
	for _, dir := range []string{"scenarios", "examples", "examples/own-incident"} {
		m, err := filepath.Glob(filepath.Join("..", "..", dir, "*.yaml"))
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	schema, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "schema.json"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		first, _, _ := strings.Cut(string(data), "\n")
		rel, ok := strings.CutPrefix(first, prefix)
		require.True(t, ok, "%s: first line %q", f, first)
		got, err := filepath.Abs(filepath.Join(filepath.Dir(f), rel))
		require.NoError(t, err)
		require.Equal(t, schema, got, f)
	}
}

// A report of a run at a size loads back at that size, and an unknown
// size is an input error before anything starts.
func TestReportKeepsItsSize(t *testing.T) {
	s, err := builtinScenario(t).Sized("ci")
	require.NoError(t, err)
	back, err := reports.Load(writeReport(t, s, ""))
	require.NoError(t, err)
	require.Equal(t, "ci", back.Scenario.Size)
	again, err := scenarios.OfRecord(back)
	require.NoError(t, err)
	require.Equal(t, s.Timeline, again.Timeline)
	require.Less(t, again.RunLength(), builtinScenario(t).RunLength())

	_, errOut, code := chaoslab(t, "run", s.ID, "--size", "nightly", "--placement", "local")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, `no size "nightly" (sizes: ci)`)
	out, _, code := chaoslab(t, "show", s.ID)
	require.Equal(t, 0, code)
	require.Contains(t, strings.SplitN(out, "\n", 2)[0], "at size ci: ")
}

// show --contract prints what a program of the user's is told and judged
// by, for every seed (each seed's workload hosts one).
func TestShowContract(t *testing.T) {
	out, _, code := chaoslab(t, "show", "IL-0384", "--contract")
	require.Equal(t, 0, code, out)
	for _, want := range []string{"CHAOSLAB_ETCD_ENDPOINTS", "CHAOSLAB_FLEET_PREFIX", "GET /route?key=K", "It must", "from the outside", "fleet-server-python"} {
		require.Contains(t, out, want)
	}
	out, _, code = chaoslab(t, "show", "il-0587-zk-treecache-reconnect-storm", "--contract", "-o", "json")
	require.Equal(t, 0, code, out)
	var c lab.Contract
	require.NoError(t, json.Unmarshal([]byte(out), &c))
	require.NotEmpty(t, c.Env)
	require.NotEmpty(t, c.Measured)
	out, _, code = chaoslab(t, "show", "IL-0206", "--contract")
	require.Equal(t, 0, code, out)
	for _, want := range []string{"CHAOSLAB_DNS_SERVER", "CHAOSLAB_PG_USER", "statement log", "Not measured for your program", "app.read_p99_ms.during_faults"} {
		require.Contains(t, out, want)
	}
	out, _, code = chaoslab(t, "show", "AWS-EBS-2011", "--contract")
	require.Equal(t, 0, code, out)
	for _, want := range []string{"CHAOSLAB_CONTROL_URL", "POST /v1/volumes", "at the control plane", "Judged only by", "ebs.create_success.other_zones", "ebs-caller-python"} {
		require.Contains(t, out, want)
	}
}
