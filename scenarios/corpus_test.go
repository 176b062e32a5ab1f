package scenarios_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// want is one error a malformed file must produce: `# want: LINE: FIELD: REASON`
// (or `# want: LINE: REASON` for a problem of the file as a whole).
var wantRE = regexp.MustCompile(`^# want: (\d+): (.+)$`)

// wants reads the # want: lines at the top of a corpus file.
func wants(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "#") {
			break
		}
		if m := wantRE.FindStringSubmatch(sc.Text()); m != nil {
			out = append(out, m[1]+": "+m[2])
		}
	}
	require.NotEmpty(t, out, "a corpus file says what it must produce in a # want: line")
	return out
}

// withSeeds checks case ids against the built-in case records.
func withSeeds(t *testing.T) {
	old := scenarios.CaseChecker
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	t.Cleanup(func() { scenarios.CaseChecker = old })
}

// Every malformed file of testdata/bad is refused with the error its
// # want: lines give: file:line: field.path: reason.
func TestMalformedCorpus(t *testing.T) {
	withSeeds(t)
	files, err := filepath.Glob("testdata/bad/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 40)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			_, err = scenarios.Load(f)
			es := fieldErrors(t, err)
			for _, w := range wants(t, data) {
				require.Contains(t, err.Error(), f+":"+w, "want %s:%s", f, w)
			}
			for _, e := range es {
				require.Equal(t, f, e.File)
				require.Positive(t, e.Line, "every problem names its line: %v", e)
				require.NotEmpty(t, e.Msg)
			}
		})
	}
}

// The corpus files are edits of a valid scenario: each base, as the
// corpus has it, loads.
func TestCorpusBasesLoad(t *testing.T) {
	withSeeds(t)
	for _, f := range []string{"testdata/good/zk.yaml", "testdata/good/fleet.yaml", "testdata/good/exec.yaml", "testdata/good/own-case.yaml"} {
		s, err := scenarios.Load(f)
		require.NoError(t, err, f)
		require.NotEmpty(t, s.VariantNames())
	}
}

// A scenario's case may be a record file of the user's own, relative to
// the scenario's file.
func TestCaseFile(t *testing.T) {
	withSeeds(t)
	s, err := scenarios.Load("testdata/good/own-case.yaml")
	require.NoError(t, err)
	require.Equal(t, "cases/my-outage.yaml", s.Case)
	require.Equal(t, filepath.Join("testdata", "good", "cases", "my-outage.yaml"), s.CaseFile())
	builtin, err := scenarios.Load("testdata/good/zk.yaml")
	require.NoError(t, err)
	require.Empty(t, builtin.CaseFile(), "a case id names no file")

	// A record that does not validate is refused with the record's own problem.
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/good/own-case.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.yaml"), src, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "cases"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cases", "my-outage.yaml"), []byte("id: MY-1\norganisation: us\n"), 0o644))
	_, err = scenarios.Load(filepath.Join(dir, "s.yaml"))
	require.ErrorContains(t, err, "s.yaml:3: case: case record "+filepath.Join(dir, "cases", "my-outage.yaml"))
	require.ErrorContains(t, err, "date: required")
}

// The line of a syntax error is the line of the mistake, however far on
// the parser gave up, and the message says what is wrong.
func TestSyntaxErrorLines(t *testing.T) {
	for _, tc := range []struct{ text, at, msg string }{{
		text: "id: x\ntitle: \"open\ncase: IL-0587\nsystem: zookeeper\nhypotheses:\n  - op: \"<=\"\n    id: y\n",
		at:   "title:", msg: `a string opened with " is not closed on this line`,
	}, {
		text: "id: x\ntimeline:\n  warmup: 10s\n\tobserve: 10s\n",
		at:   "\tobserve", msg: "a tab in the indentation",
	}, {
		text: "id: x\nfanout: [1, 2\ncase: y\n",
		at:   "fanout:", msg: "a list opened with [ is not closed",
	}, {
		text: "id: x\ntitle: it's fine: really\n",
		at:   "title:", msg: "mapping values are not allowed in this context",
	}} {
		_, err := scenarios.Parse("s.yaml", []byte(tc.text))
		es := fieldErrors(t, err)
		require.Len(t, es, 1, tc.text)
		require.Equal(t, lineOf(t, tc.text, tc.at), es[0].Line, "%q: %v", tc.text, err)
		require.Contains(t, es[0].Msg, tc.msg)
	}
}

// A client's variant is named after its program, within the bounds of a
// variant's name, however long the program's name.
func TestClientVariantNameFits(t *testing.T) {
	withSeeds(t)
	src, err := os.ReadFile("testdata/good/zk.yaml")
	require.NoError(t, err)
	s, err := scenarios.Parse("zk.yaml", src)
	require.NoError(t, err)
	p := lab.ClientProgram{Command: []string{"/opt/bin/A_Client.With-a-Name-Far-Longer-Than-Any-Variant's.py"}}
	name := scenarios.ClientVariantName(s, p)
	require.LessOrEqual(t, len(name), scenarios.MaxVariantLen)
	require.Equal(t, "a-client-with-a-name-far", name)
	s2, got, _, err := scenarios.WithClient(s, src, p)
	require.NoError(t, err)
	require.Equal(t, name, got)
	require.Contains(t, s2.Variants, name)
}

// A user's program is not judged on what only the kind's own client
// measures (IL-0206's read latency, timed inside the app): with --client
// that hypothesis is optional, in the variant's copy of the scenario too.
func TestClientHypothesesOptionalWhereNotMeasured(t *testing.T) {
	withSeeds(t)
	src, err := os.ReadFile("il-0206-consul-agent-oom-primary-fallback.yaml")
	require.NoError(t, err)
	s, err := scenarios.Parse("scenarios/il-0206-consul-agent-oom-primary-fallback.yaml", src)
	require.NoError(t, err)
	s2, name, out, err := scenarios.WithClient(s, src, lab.ClientProgram{Command: []string{"./app"}})
	require.NoError(t, err)
	require.Equal(t, "app", name)
	optional := map[string]bool{}
	for _, h := range s2.Hypotheses {
		optional[h.ID] = h.Optional
	}
	require.Equal(t, map[string]bool{"reads-on-replicas": false, "read-p99": true}, optional)
	back, err := scenarios.Parse("copy.yaml", out)
	require.NoError(t, err)
	require.Equal(t, s2.Hypotheses, back.Hypotheses, "the report's copy re-checks the same way")
}

// In an exec scenario the program's fields are the workload's own: a
// user's client replaces them (no program key), and an image alone
// leaves none of the scenario's command behind.
func TestClientReplacesAnExecProgram(t *testing.T) {
	withSeeds(t)
	src, err := os.ReadFile("../examples/exec-etcd-quorum-loss.yaml")
	require.NoError(t, err)
	s, err := scenarios.Parse("examples/exec-etcd-quorum-loss.yaml", src)
	require.NoError(t, err)
	for _, p := range []lab.ClientProgram{
		{Command: []string{"./my-client", "--fast"}, Env: map[string]string{"MODE": "x"}},
		{Image: "my-client:1"},
	} {
		s2, name, _, err := scenarios.WithClient(s, src, p)
		require.NoError(t, err)
		st, err := s2.WorkloadFor(name)
		require.NoError(t, err)
		b, err := json.Marshal(st)
		require.NoError(t, err)
		var w struct {
			Command []string          `json:"command"`
			Image   string            `json:"image"`
			Env     map[string]string `json:"env"`
		}
		require.NoError(t, json.Unmarshal(b, &w))
		require.Equal(t, p.Command, w.Command, "%s", b)
		require.Equal(t, p.Image, w.Image)
		require.Equal(t, p.Env, w.Env)
	}
}

// A user's create-volume caller under AWS-EBS-2011 is judged by what a
// caller changes (the other zones' calls), not by the volumes the storage
// nodes leave stuck: with --client the scenario keeps only the
// hypotheses on the contract's judged metrics.
func TestClientJudgedOnlyByItsContract(t *testing.T) {
	withSeeds(t)
	src, err := os.ReadFile("aws-ebs-2011-remirror-storm.yaml")
	require.NoError(t, err)
	s, err := scenarios.Parse("scenarios/aws-ebs-2011-remirror-storm.yaml", src)
	require.NoError(t, err)
	s2, _, out, err := scenarios.WithClient(s, src, lab.ClientProgram{Command: []string{"./caller"}})
	require.NoError(t, err)
	var ids []string
	for _, h := range s2.Hypotheses {
		ids = append(ids, h.ID)
	}
	require.Equal(t, []string{"other-zones-create"}, ids)
	back, err := scenarios.Parse("copy.yaml", out)
	require.NoError(t, err)
	require.Equal(t, s2.Hypotheses, back.Hypotheses, "the report's copy re-checks the same way")
}

// IL-0277's hypotheses are all on the operator's procedure (the quorum
// and the elections a replacement cost), which no client changes: a
// client's run is refused with the reason, not judged violated whatever
// the client does. IL-0587's are all on its clients.
func TestClientNotJudgedByTheProcedure(t *testing.T) {
	withSeeds(t)
	src, err := os.ReadFile("il-0277-zk-rolling-replacement-quorum-loss.yaml")
	require.NoError(t, err)
	s, err := scenarios.Parse("scenarios/il-0277-zk-rolling-replacement-quorum-loss.yaml", src)
	require.NoError(t, err)
	_, _, _, err = scenarios.WithClient(s, src, lab.ClientProgram{Command: []string{"./client"}})
	require.ErrorIs(t, err, scenarios.ErrNothingJudged)
	// Where a client is judged under IL-0277 instead: the example beside
	// the seed, which keeps the procedure and judges the clients.
	require.Equal(t, []string{"../examples/zk-replacement-clients.yaml"}, scenarios.ClientScenarios("../examples", "IL-0277"))
	s, err = scenarios.Parse("scenarios/il-0587-zk-treecache-reconnect-storm.yaml", mustRead(t, "il-0587-zk-treecache-reconnect-storm.yaml"))
	require.NoError(t, err)
	s3, _, _, err := scenarios.WithClient(s, mustRead(t, "il-0587-zk-treecache-reconnect-storm.yaml"), lab.ClientProgram{Command: []string{"./client"}})
	require.NoError(t, err)
	require.Len(t, s3.Hypotheses, len(s.Hypotheses), "IL-0587's hypotheses are all about its clients")
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}
