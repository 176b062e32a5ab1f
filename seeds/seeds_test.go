package seeds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wantIDs are the five source incidents, in All's order.
var wantIDs = []string{"AWS-EBS-2011", "IL-0206", "IL-0277", "IL-0384", "IL-0587"}

func TestAllLoadsAndValidatesEveryEmbeddedRecord(t *testing.T) {
	names, err := fs.Glob(embedded, "*.yaml")
	require.NoError(t, err)
	require.Len(t, names, len(wantIDs), "one YAML file per source incident")

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data, err := embedded.ReadFile(name)
			require.NoError(t, err)
			r, err := Parse(name, data)
			require.NoError(t, err)
			require.NoError(t, r.Validate())
			require.Equal(t, strings.ToLower(r.ID)+".yaml", name, "file is named after the id")
			require.Equal(t, name, r.File())

			// Every source has an archived copy on the Wayback Machine.
			for _, s := range r.Sources {
				require.True(t, strings.HasPrefix(s.Archived, "https://web.archive.org/web/"), s.Archived)
				require.True(t, strings.HasSuffix(s.Archived, s.URL), "archived copy %s is of %s", s.Archived, s.URL)
			}
			// IL cases also link their incidentlib page.
			if strings.HasPrefix(r.ID, "IL-") {
				require.Contains(t, sourceURLs(r), "https://benchlet.com/incidentlib/app/cases/"+r.ID)
			}
			require.GreaterOrEqual(t, len(r.Timeline), 5, "the timeline covers the whole chain")
			require.GreaterOrEqual(t, len(r.Chain), 4)
			require.GreaterOrEqual(t, len(r.Numbers), 8, "every published number is recorded")
			require.GreaterOrEqual(t, strings.Count(strings.TrimSpace(r.Summary), "\n\n"), 1, "summary has 2-3 paragraphs")
			require.LessOrEqual(t, strings.Count(strings.TrimSpace(r.Summary), "\n\n"), 2, "summary has 2-3 paragraphs")
			require.NotEmpty(t, r.LabNotes)

			// Timeline entries are in order: days never go back, and clock times within a
			// day never go back. (The first entry may predate the record's date.)
			day, last := "", ""
			for i, e := range r.Timeline {
				if e.Date != "" {
					require.GreaterOrEqual(t, e.Date, day, "timeline[%d]", i)
					if e.Date != day {
						last = ""
					}
					day = e.Date
				}
				if e.At != "" {
					require.GreaterOrEqual(t, e.At, last, "timeline[%d]", i)
					last = e.At
				}
			}
		})
	}

	recs, err := All()
	require.NoError(t, err)
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	require.Equal(t, wantIDs, ids, "All is sorted by id")
}

func sourceURLs(r Record) []string {
	var urls []string
	for _, s := range r.Sources {
		urls = append(urls, s.URL)
	}
	return urls
}

func number(t *testing.T, r Record, name string) Number {
	t.Helper()
	for _, n := range r.Numbers {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("%s has no number %q", r.ID, name)
	return Number{}
}

// The figures the brief singles out must be present with the published values.
func TestRecordsCarryThePublishedFigures(t *testing.T) {
	cases := []struct {
		id, name string
		value    float64
		unit     string
	}{
		{"IL-0587", "full_outage_duration", 20, "minutes"},
		{"IL-0587", "degraded_access_duration", 3, "hours"},
		{"IL-0587", "ensemble_size", 3, "count"},
		{"IL-0587", "znodes_per_mirrored_tree", 10000, "count"},
		{"IL-0587", "time_to_detect", 26, "minutes"},
		{"IL-0587", "time_to_resolve", 234, "minutes"},
		{"IL-0277", "time_to_resolve", 954, "minutes"},
		{"IL-0277", "proxy_request_multiplier", 3, "times"},
		{"IL-0384", "fleet_restart_rate", 300, "servers_per_hour"},
		{"IL-0384", "time_to_resolve", 1028, "minutes"},
		{"AWS-EBS-2011", "stuck_volumes_during_storm", 13, "percent"},
		{"AWS-EBS-2011", "additional_stuck_from_race_condition", 5, "percent"},
		{"AWS-EBS-2011", "unrecoverable_volumes", 0.07, "percent"},
		{"AWS-EBS-2011", "single_az_rds_stuck_io_peak", 45, "percent"},
		{"AWS-EBS-2011", "multi_az_rds_no_failover", 2.5, "percent"},
		{"IL-0206", "pod_memory_limit_before", 500, "MB"},
		{"IL-0206", "pod_memory_limit_after", 1, "GB"},
		{"IL-0206", "ci_feature_flag_rollout", 50, "percent"},
	}
	for _, c := range cases {
		r, err := Get(c.id)
		require.NoError(t, err)
		n := number(t, r, c.name)
		require.Equal(t, c.value, n.Value, "%s %s", c.id, c.name)
		require.Equal(t, c.unit, n.Unit, "%s %s", c.id, c.name)
	}

	kinesis, err := Get("IL-0384")
	require.NoError(t, err)
	require.Equal(t, "05:15 PST", findTimeline(t, kinesis, "First alarms").At)
	require.Equal(t, "17h 8m", kinesis.TimeToResolve)
	require.Empty(t, kinesis.TimeToDetect, "Kinesis published no time to detect")

	labs := map[string]string{}
	recs, err := All()
	require.NoError(t, err)
	for _, r := range recs {
		labs[r.ID] = r.LabSystem
	}
	require.Equal(t, map[string]string{
		"IL-0587": "zookeeper", "IL-0277": "zookeeper", "IL-0384": "etcd",
		"AWS-EBS-2011": "etcd", "IL-0206": "consul",
	}, labs)
}

func findTimeline(t *testing.T, r Record, prefix string) TimelineEntry {
	t.Helper()
	for _, e := range r.Timeline {
		if strings.HasPrefix(e.Event, prefix) {
			return e
		}
	}
	t.Fatalf("%s has no timeline event starting %q", r.ID, prefix)
	return TimelineEntry{}
}

// Computed spans must agree with the clock times they are computed from.
func TestComputedSpansMatchTheirClockTimes(t *testing.T) {
	span := regexp.MustCompile(`(\d\d):(\d\d)\)? (?:UTC|PST)?.*?(\d\d):(\d\d)`)
	recs, err := All()
	require.NoError(t, err)
	checked := 0
	for _, r := range recs {
		for _, n := range r.Numbers {
			if n.Unit != "minutes" || !strings.HasPrefix(n.Text, "Computed from two published times") {
				continue
			}
			m := span.FindStringSubmatch(n.Text)
			require.NotNil(t, m, "%s %s names its two times", r.ID, n.Name)
			from := atoi(t, m[1])*60 + atoi(t, m[2])
			to := atoi(t, m[3])*60 + atoi(t, m[4])
			if to < from {
				to += 24 * 60 // next day
			}
			require.Equal(t, float64(to-from), n.Value, "%s %s: %s", r.ID, n.Name, n.Text)
			checked++
		}
	}
	require.Greater(t, checked, 15)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9')
		n = n*10 + int(c-'0')
	}
	return n
}

func TestGetIsCaseInsensitive(t *testing.T) {
	for _, id := range []string{"IL-0587", "il-0587", "Il-0587", " il-0587 "} {
		r, err := Get(id)
		require.NoError(t, err, id)
		require.Equal(t, "IL-0587", r.ID)
		require.Equal(t, "Elastic", r.Organisation)
		require.Equal(t, "2019-01-18", r.Date)
	}
	r, err := Get("aws-ebs-2011")
	require.NoError(t, err)
	require.Equal(t, "AWS-EBS-2011", r.ID)
}

func TestGetUnknownCase(t *testing.T) {
	_, err := Get("IL-9999")
	require.Error(t, err)
	require.Contains(t, err.Error(), `seeds: unknown case "IL-9999"`)
	for _, id := range wantIDs {
		require.Contains(t, err.Error(), id, "the error lists the known ids")
	}
}

// minimal is a valid record; tests break it in one place at a time.
const minimal = `id: IL-0001
organisation: Example
date: "2020-01-02"
title: A test record
systems: [zookeeper]
lab_system: zookeeper
trigger: Something happened.
timeline:
  - at: "10:00 UTC"
    event: It began.
numbers:
  - name: outage_duration
    value: 5
    unit: minutes
    text: How long it lasted.
chain:
  - A caused B.
sources:
  - url: https://example.com/postmortem
    kind: postmortem
    archived: https://web.archive.org/web/20200103/https://example.com/postmortem
summary: A short summary.
`

func TestMinimalRecordIsValid(t *testing.T) {
	r, err := Parse("minimal.yaml", []byte(minimal))
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	require.Equal(t, "2020-01-02", r.Date)
	require.Equal(t, 5.0, r.Numbers[0].Value)
}

func TestUnquotedDateIsKeptAsWritten(t *testing.T) {
	r, err := Parse("il-0001.yaml", []byte(strings.Replace(minimal, `date: "2020-01-02"`, "date: 2020-01-02", 1)))
	require.NoError(t, err)
	require.Equal(t, "2020-01-02", r.Date)
	require.NoError(t, r.Validate())
}

func TestUnknownFieldNamesFileAndLine(t *testing.T) {
	// A misspelt top-level key on line 3.
	bad := strings.Replace(minimal, "date:", "dte:", 1)
	_, err := Parse("bad.yaml", []byte(bad))
	require.Error(t, err)
	require.Contains(t, err.Error(), "bad.yaml")
	require.Contains(t, err.Error(), "line 3")
	require.Contains(t, err.Error(), "dte")

	// An unknown key inside a list item, on line 21.
	bad = strings.Replace(minimal, "    kind: postmortem\n", "    kind: postmortem\n    mirror: https://example.org\n", 1)
	_, err = Parse("il-0001.yaml", []byte(bad))
	require.Error(t, err)
	require.Contains(t, err.Error(), "il-0001.yaml")
	require.Contains(t, err.Error(), "line 21")
	require.Contains(t, err.Error(), "mirror")
}

func TestParseRejectsBadYAML(t *testing.T) {
	_, err := Parse("x.yaml", []byte("id: [unclosed\n"))
	require.ErrorContains(t, err, "x.yaml")

	_, err = Parse("x.yaml", []byte(""))
	require.ErrorContains(t, err, "x.yaml: empty document")

	_, err = Parse("x.yaml", []byte(minimal+"---\nid: IL-0002\n"))
	require.ErrorContains(t, err, "x.yaml")
	require.ErrorContains(t, err, "more than one YAML document")

	// A wrong type names the field's path and its line.
	_, err = Parse("x.yaml", []byte(strings.Replace(minimal, "value: 5", "value: five", 1)))
	require.EqualError(t, err, `x.yaml: numbers[0].value: want a number, got "five" (line 13)`)
}

// Type errors name the file, the field path and the line, every one of
// them, and say how to write what was meant.
func TestParseTypeErrorsNameTheFieldPath(t *testing.T) {
	bad := strings.NewReplacer(
		"value: 5", "value: 40-50",
		"systems: [zookeeper]", "systems: zookeeper",
		"    event: It began.\n", "    event: [It, began]\n",
		"summary: A short summary.", "summary:\n  text: A short summary.",
	).Replace(minimal)
	_, err := Parse("x.yaml", []byte(bad))
	require.Error(t, err)
	var es Errors
	require.ErrorAs(t, err, &es)
	require.Len(t, es, 4, err.Error())
	require.Contains(t, err.Error(), `x.yaml: systems: want a list ("- " lines, or [a, b]), got "zookeeper" (line 5)`)
	require.Contains(t, err.Error(), `x.yaml: timeline[0].event: want a string, got a list (line 10)`)
	require.Contains(t, err.Error(), `x.yaml: numbers[0].value: want a number, got "40-50": for a range, give one figure (its middle, say) with approx: true, and the published words in text (line 13)`)
	require.Contains(t, err.Error(), `x.yaml: summary: want a string, got a mapping (line 23)`)
	require.Equal(t, &FieldError{File: "x.yaml", Line: 13, Field: "numbers[0].value", Msg: es[2].Msg}, es[2])

	for text, want := range map[string]string{
		strings.Replace(minimal, "value: 5", `value: "5"`, 1):                                           `numbers[0].value: want a number, got the string "5" (quoted, so not a number or true/false) (line 13)`,
		strings.Replace(minimal, "value: 5", "value: about 5", 1):                                       `numbers[0].value: want a number, got "about 5": give the figure alone with approx: true`,
		strings.Replace(minimal, "value: 5", "value: 5 minutes", 1):                                     `numbers[0].value: want a number, got "5 minutes": give the figure alone, and its unit in unit`,
		strings.Replace(minimal, "value: 5", "value:", 1):                                               `numbers[0].value: want a number, got nothing (line 13)`,
		strings.Replace(minimal, "unit: minutes", "unit: minutes\n    approx: yes", 1):                  `numbers[0].approx: want true or false, got "yes"`,
		strings.Replace(minimal, "    kind: postmortem\n", "    kind: postmortem\n    kind: blog\n", 1): `sources[0].kind: repeated field (line 21)`,
		strings.Replace(minimal, "  - A caused B.", "  A caused B.", 1):                                 `chain: want a list`,
		"- id: IL-0001\n": `x.yaml: want the record's fields (key: value lines), got a list (line 1)`,
	} {
		_, err := Parse("x.yaml", []byte(text))
		require.ErrorContains(t, err, want)
	}

	// A value that is missing altogether is Validate's to report.
	r, err := Parse("x.yaml", []byte(strings.Replace(minimal, "    value: 5\n", "", 1)))
	require.NoError(t, err)
	require.EqualError(t, r.Validate(), `x.yaml: numbers[0].value: required: the figure as one number (a range or "about N": one value with approx: true) (line 12)`)
}

// A scenario given where a case record is wanted is named as one, in a
// line, not as a list of unknown fields.
func TestParseTellsAScenario(t *testing.T) {
	scenario := "id: my-scenario\ntitle: A scenario\ncase: IL-0587\nsystem: zookeeper\nworkload:\n  kind: zk-tree-mirror\ntimeline:\n  warmup: 10s\nhypotheses: []\n"
	_, err := Parse("mine.yaml", []byte(scenario))
	require.ErrorIs(t, err, ErrScenario)
	require.Len(t, strings.Split(err.Error(), "\n"), 1, err.Error())
	require.Contains(t, err.Error(), "mine.yaml is a scenario, not a case record (it has workload: and hypotheses:; a case record has organisation:, numbers:, sources:)")

	// A record with a stray scenario key is a record with an unknown field.
	_, err = Parse("mine.yaml", []byte(minimal+"workload: {}\n"))
	require.NotErrorIs(t, err, ErrScenario)
	require.ErrorContains(t, err, "mine.yaml: workload: unknown field")
}

func TestMissingRequiredFieldNamesFileAndPath(t *testing.T) {
	// url removed from sources[0]: the error names the file, the path and the line of
	// the list item that lacks it.
	bad := strings.Replace(minimal, "  - url: https://example.com/postmortem\n    kind: postmortem\n", "  - kind: postmortem\n", 1)
	r, err := Parse("il-0001.yaml", []byte(bad))
	require.NoError(t, err)
	err = r.Validate()
	require.Error(t, err)
	require.Contains(t, err.Error(), "il-0001.yaml: sources[0].url: required (line 19)")

	// A present but empty title names the title's own line.
	bad = strings.Replace(minimal, "title: A test record", `title: ""`, 1)
	r, err = Parse("il-0001.yaml", []byte(bad))
	require.NoError(t, err)
	require.EqualError(t, r.Validate(), "il-0001.yaml: title: required (line 4)")

	// Several problems are all reported, one per line.
	bad = strings.NewReplacer(
		"lab_system: zookeeper", "lab_system: redis",
		`date: "2020-01-02"`, `date: "2020-13-45"`,
		"    unit: minutes\n", "",
		"summary: A short summary.\n", "",
		"archived: https://web.archive.org", "archived: http://web.archive.org",
	).Replace(minimal)
	r, err = Parse("il-0001.yaml", []byte(bad))
	require.NoError(t, err)
	err = r.Validate()
	require.Error(t, err)
	msgs := strings.Split(err.Error(), "\n")
	require.Len(t, msgs, 5, err.Error())
	require.Contains(t, err.Error(), `il-0001.yaml: date: not a YYYY-MM-DD date: "2020-13-45" (line 3)`)
	require.Contains(t, err.Error(), `il-0001.yaml: lab_system: "redis" is not one of zookeeper, etcd, consul (line 6)`)
	require.Contains(t, err.Error(), "il-0001.yaml: numbers[0].unit: required (line 12)")
	require.Contains(t, err.Error(), "il-0001.yaml: sources[0].archived: must start with https://")
	require.Contains(t, err.Error(), "il-0001.yaml: summary: required")

	// Empty lists are reported by name.
	r, err = Parse("il-0001.yaml", []byte("id: IL-0001\n"))
	require.NoError(t, err)
	err = r.Validate()
	for _, field := range []string{"organisation", "date", "title", "systems", "lab_system", "trigger", "chain", "numbers", "sources", "summary"} {
		require.Contains(t, err.Error(), "il-0001.yaml: "+field+": required", field)
	}
}

func TestLoadReadsAFileOnDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "il-0001.yaml")
	require.NoError(t, os.WriteFile(path, []byte(minimal), 0o644))
	r, err := Load(path)
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	require.Equal(t, "il-0001.yaml", r.File())

	bad := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(minimal+"colour: red\n"), 0o644))
	_, err = Load(bad)
	require.ErrorContains(t, err, "broken.yaml: colour: unknown field (known: id, organisation, ")
	require.ErrorContains(t, err, "(line 23)")

	_, err = Load(filepath.Join(dir, "missing.yaml"))
	require.Error(t, err)
}

func TestFormat(t *testing.T) {
	recs, err := All()
	require.NoError(t, err)
	for _, r := range recs {
		t.Run(r.ID, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, r.Format(&buf))
			out := buf.String()
			// The title is wrapped, so compare with whitespace collapsed.
			require.Contains(t, oneLine(out), oneLine(r.Title))
			for _, s := range r.Sources {
				require.Contains(t, out, s.URL)
				require.Contains(t, out, "archived: "+s.Archived)
			}
			for _, h := range []string{"Trigger", "Timeline", "Numbers", "Causal chain", "Remediation", "Action items", "Sources", "Summary"} {
				require.Contains(t, out, "\n"+h+"\n", "section %s", h)
			}
			for _, n := range r.Numbers {
				require.Contains(t, out, n.Name)
			}
			require.Contains(t, out, r.Organisation)
			require.Contains(t, out, r.Date)
			for i, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "://") {
					continue // URLs are never broken
				}
				require.LessOrEqual(t, len([]rune(line)), Width, "line %d: %q", i+1, line)
			}
		})
	}
}

func TestJSONUsesSnakeCaseKeys(t *testing.T) {
	r, err := Get("IL-0206")
	require.NoError(t, err)
	data, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	for _, k := range []string{"id", "organisation", "lab_system", "root_cause", "users_affected", "time_to_detect", "time_to_resolve", "action_items", "lab_notes", "numbers", "sources"} {
		require.Contains(t, m, k)
	}
	require.Equal(t, "consul", m["lab_system"])
}

func TestWrap(t *testing.T) {
	out := wrap("- ", strings.Repeat("word ", 50), 30, "  ")
	for _, line := range strings.Split(out, "\n") {
		require.LessOrEqual(t, len(line), 30)
		require.True(t, strings.HasPrefix(line, "- word") || strings.HasPrefix(line, "  word"), line)
	}
	long := "https://example.com/" + strings.Repeat("x", 60)
	require.Equal(t, "see\n"+long+"\nok", wrap("", "see "+long+" ok", 30, ""))
}

// archived is optional: a record without an archived copy validates, and
// Notes names each source without one; when given it must be https.
func TestArchivedIsOptional(t *testing.T) {
	bare := strings.Replace(minimal, "    archived: https://web.archive.org/web/20200103/https://example.com/postmortem\n", "", 1)
	r, err := Parse("mine.yaml", []byte(bare))
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	notes := r.Notes()
	require.Len(t, notes, 1)
	require.Contains(t, notes[0], "mine.yaml: sources[0]: https://example.com/postmortem has no archived copy: allowed")
	require.Contains(t, notes[0], "(line 19)")

	r, err = Parse("mine.yaml", []byte(minimal))
	require.NoError(t, err)
	require.Empty(t, r.Notes(), "every source archived")

	r, err = Parse("mine.yaml", []byte(strings.Replace(minimal, "archived: https://web.archive.org", "archived: web.archive.org", 1)))
	require.NoError(t, err)
	require.ErrorContains(t, r.Validate(), `mine.yaml: sources[0].archived: must start with https://: "web.archive.org/web/20200103/https://example.com/postmortem" (the address of an archived copy of url, such as https://web.archive.org/web/2024/https://example.com/postmortem; leave archived out when no copy exists) (line 21)`)
}

// A pull request and a mailing-list post are sources; every kind is
// documented.
func TestSourceKinds(t *testing.T) {
	for _, kind := range []string{"pull-request", "mailing-list"} {
		r, err := Parse("mine.yaml", []byte(strings.Replace(minimal, "kind: postmortem", "kind: "+kind, 1)))
		require.NoError(t, err)
		require.NoError(t, r.Validate(), kind)
	}
	for _, kind := range SourceKinds {
		require.NotEmpty(t, SourceKindDocs[kind], kind)
	}
	require.Len(t, SourceKindDocs, len(SourceKinds))
	for _, kind := range ResponderKinds {
		require.NotEmpty(t, KindDocs[kind], kind)
	}
	require.Len(t, KindDocs, len(ResponderKinds))

	r, err := Parse("mine.yaml", []byte(strings.Replace(minimal, "kind: postmortem", "kind: tweet", 1)))
	require.NoError(t, err)
	require.ErrorContains(t, r.Validate(), `sources[0].kind: "tweet" is not one of postmortem, blog, official-status, issue, pull-request, mailing-list, case-library`)
}

// A record is told from a scenario by its keys, even when its YAML is
// broken.
func TestIsRecordText(t *testing.T) {
	require.True(t, IsRecordText([]byte(minimal)))
	require.True(t, IsRecordText([]byte(strings.Replace(minimal, "title: A test record", "title: [A test record", 1))))
	require.False(t, IsRecordText([]byte("id: x\ncase: IL-0587\nworkload:\n  kind: exec\n  # organisation: no\n")))
}

// ProblemsOf finds the field errors in a joined and wrapped error.
func TestProblemsOf(t *testing.T) {
	_, perr := Parse("a.yaml", []byte(strings.Replace(minimal, "value: 5", "value: five", 1)))
	r, err := Parse("b.yaml", []byte(strings.Replace(minimal, "title: A test record", `title: ""`, 1)))
	require.NoError(t, err)
	verr := r.Validate()
	got := ProblemsOf(fmt.Errorf("read --cases: %w", errors.Join(perr, verr)))
	require.Equal(t, []*FieldError{
		{File: "a.yaml", Line: 13, Field: "numbers[0].value", Msg: `want a number, got "five"`},
		{File: "b.yaml", Line: 4, Field: "title", Msg: "required"},
	}, got)
	require.Equal(t, []*FieldError{{Msg: "read: gone"}}, ProblemsOf(fmt.Errorf("read: %w", errors.New("gone"))))
	require.Nil(t, ProblemsOf(nil))
}
