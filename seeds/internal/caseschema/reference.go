package caseschema

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/chaoslab/chaoslab/seeds"
)

// Reference returns reference.md: every key of a case record with its
// type, whether it is required, its allowed values and what it means,
// generated from the same types and comments as schema.json; then the
// allowed kinds with what each is, and the rules Validate checks.
func Reference(srcDir string) ([]byte, error) {
	s, err := reflectSchema(srcDir)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Case record reference\n\n")
	p("Generated from the Go types of `seeds/` by `go generate ./seeds`; do not edit. ")
	p("[docs/writing-a-case-record.md](../docs/writing-a-case-record.md) tells how to write one, with an example. ")
	p("Editors check a record against [schema.json](schema.json) (`chaoslab schema case` prints it); ")
	p("`chaoslab validate --cases DIR` checks records as chaoslab reads them.\n\n")
	p("A case record is one YAML file, one document, holding the keys below. Keys are strict: ")
	p("an unknown or repeated key, or a value of the wrong type, is an error naming the file, the field path and the line.\n\n")
	for _, t := range types {
		def, title := s, "The record (top level)"
		if t.path != "" {
			def = s.Definitions[reflect.TypeOf(t.v).Name()]
			title = "`" + t.path + "`"
		}
		p("## %s\n\n", title)
		if t.path != "" && def.Description != "" {
			p("%s\n\n", oneLine(def.Description))
		}
		p("| key | type | required | allowed | meaning |\n|---|---|---|---|---|\n")
		for pr := def.Properties.Oldest(); pr != nil; pr = pr.Next() {
			key := pr.Key
			if t.path != "" {
				key = t.path + "." + pr.Key
			}
			p("| `%s` | %s | %s | %s | %s |\n", key, typeOf(pr.Value, t.path, pr.Key), yesNo(contains(def.Required, pr.Key)), allowed(pr.Value), cell(pr.Value.Description))
		}
		p("\n")
	}

	p("## Allowed values\n\n")
	p("### `lab_system`\n\n%s.\n\n", codeList(seeds.LabSystems))
	p("### `sources[].kind`\n\n| kind | what it is |\n|---|---|\n")
	for _, k := range seeds.SourceKinds {
		p("| `%s` | %s |\n", k, seeds.SourceKindDocs[k])
	}
	p("\n### `timeline[].actions[].kind`\n\nThe responders' actions the simulator replays (sim/cases).\n\n| kind | what it is |\n|---|---|\n")
	for _, k := range seeds.ActionKinds {
		p("| `%s` | %s |\n", k, seeds.KindDocs[k])
	}
	p("\n### `training.responders[].kind`\n\nA trainee's actions are matched against these: the actions above and those the simulator does not replay.\n\n| kind | what it is |\n|---|---|\n")
	for _, k := range seeds.ResponderKinds {
		p("| `%s` | %s |\n", k, seeds.KindDocs[k])
	}
	p("\n## Rules\n\n")
	p("`chaoslab validate` checks these (schema.json checks those a JSON Schema can say).\n\n")
	p("- **Required.** %s must be present and not blank; a list needs at least one item. ", codeList(s.Required))
	p("Inside a list item, the keys marked required above.\n")
	p(rules)
	return b.Bytes(), nil
}

const rules = `- **Dates** (` + "`date`, `timeline[].date`" + `) are ` + "`YYYY-MM-DD`" + `, quoted or not.
- **Clock times** (` + "`timeline[].at`, `timeline[].actions[].until`" + `) are 24-hour, with the zone the write-up gives: ` + "`09:35 UTC`, `05:15 PST`, `10:07 PDT`" + `. Leave ` + "`at`" + ` empty (` + "`\"\"`" + `) when the write-up gives no clock time for an event. Give an entry a ` + "`date`" + ` where the day changes; an entry without one is on the day of the entry before it, and the first on the record's ` + "`date`" + `. Entries are in the order of events. An entry with ` + "`actions`" + ` needs a clock time.
- **Numbers.** Each is one figure the write-up publishes. ` + "`value`" + ` is a plain number: no unit, no range, no words. A figure published as "about N", "a few hundred" or a range is one value (a range's middle, say) with ` + "`approx: true`" + `, and the published words go in ` + "`text`" + `. ` + "`unit`" + ` says what the value counts: ` + "`count`" + ` for a plain count (a report prints it without a unit), else ` + "`minutes`, `hours`, `days`, `percent`, `times`, `MB`, `GB`" + ` or snake_case words (` + "`servers_per_hour`" + `; a report prints the underscores as spaces). A span computed from two published clock times is in minutes, and its ` + "`text`" + ` says which two ("Computed from two published times: ..."). ` + "`name`" + ` is snake_case and unique in the record; a scenario's evidence names it (` + "`number:`" + `) to print the figure beside what the lab measured.
- **Sources.** ` + "`url`" + ` is the write-up's https address; ` + "`kind`" + `, when given, is one of the kinds above. ` + "`archived`" + ` is optional. When given, it is the https address of an archived copy of ` + "`url`" + ` (the Wayback Machine's ` + "`https://web.archive.org/web/<date>/<url>`" + `, say). When no copy exists, leave it out: the record is valid, and ` + "`chaoslab validate`" + ` prints a note naming each source without one. Make a copy when you can, for a write-up that moves or goes away leaves the record citing nothing.
- **Ids.** Ids are compared without regard to case. A record of yours may not take a built-in record's id, and two records of ` + "`--cases`" + ` may not share one.
- **Files.** One record per file, one YAML document, at most 1 MiB. A built-in record's file is named after its id in lower case (` + "`seeds/il-0587.yaml`" + `); a file of yours may have any name ending in ` + "`.yaml` or `.yml`" + `. A file with a scenario's keys (` + "`workload:`, `hypotheses:`" + `) is a scenario, not a case record: ` + "`--cases DIR`" + ` skips it with a note.
`

// typeOf says what a key holds, linking to the section of a nested type.
func typeOf(s *jsonschema.Schema, parent, key string) string {
	path := key
	if parent != "" {
		path = parent + "." + key
	}
	switch {
	case s.Ref != "":
		return "mapping ([`" + path + "`](#" + anchor(path) + "))"
	case s.Type == "array" && s.Items != nil && s.Items.Ref != "":
		return "list of mappings ([`" + path + "[]`](#" + anchor(path+"[]") + "))"
	case s.Type == "array" && s.Items != nil:
		return "list of " + s.Items.Type + "s"
	case s.Type == "boolean":
		return "true or false"
	}
	return s.Type
}

// anchor is the id GitHub gives the heading "`path`".
func anchor(path string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return -1
	}, path)
}

// allowed says in words what values a key takes.
func allowed(s *jsonschema.Schema) string {
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vals[i] = fmt.Sprint(v)
		}
		return codeList(vals)
	}
	switch s.Pattern {
	case "":
	case DatePattern:
		return "`YYYY-MM-DD`"
	case AtPattern:
		return "`HH:MM UTC` (or PST, PDT), or empty"
	case seeds.ClockPattern:
		return "`HH:MM UTC` (or PST, PDT)"
	case seeds.NamePattern:
		return "snake_case"
	case HTTPSPattern:
		return "an `https://` address"
	default:
		return "`" + s.Pattern + "`"
	}
	if s.Type == "number" {
		return "a number"
	}
	return ""
}

func codeList(l []string) string {
	q := make([]string, len(l))
	for i, v := range l {
		q[i] = "`" + v + "`"
	}
	return strings.Join(q, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell is text fit for a table cell.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }
