package seeds

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// FieldError is one problem of a case record: its file, the line (0 when
// unknown), the field path (numbers[2].value; "" for the whole file) and
// what is wrong.
type FieldError struct {
	File  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Field string `json:"field,omitempty"`
	Msg   string `json:"message"`
}

// Error reads "file: field: message (line N)".
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

// Errors is every problem found in one record, one a line.
type Errors []*FieldError

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// orNil is es as an error, nil when there is none (a nil Errors in an
// error interface is not nil).
func (es Errors) orNil() error {
	if len(es) == 0 {
		return nil
	}
	return es
}

// ProblemsOf lists the field errors err holds (through errors.Join and
// wrapping); a problem that is not one is returned with its text only.
func ProblemsOf(err error) []*FieldError {
	switch x := err.(type) {
	case nil:
		return nil
	case Errors:
		return x
	case *FieldError:
		return []*FieldError{x}
	case interface{ Unwrap() []error }:
		var out []*FieldError
		for _, e := range x.Unwrap() {
			out = append(out, ProblemsOf(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		// Wrapped field errors are themselves (each names its file); a
		// wrapped plain error is the wrapper's text.
		if in := ProblemsOf(x.Unwrap()); len(in) > 1 || (len(in) == 1 && in[0].File != "") {
			return in
		}
	}
	return []*FieldError{{Msg: err.Error()}}
}

// ErrScenario is what Parse returns (errors.Is) for a scenario file given
// where a case record is wanted.
var ErrScenario = errors.New("a scenario, not a case record")

// scenarioError says that a file is a scenario, in a line.
type scenarioError struct {
	file string
	keys []string
}

func (e scenarioError) Error() string {
	keys := slices.Clone(e.keys)
	slices.SortFunc(keys, func(a, b string) int { return slices.Index(scenarioKeys, a) - slices.Index(scenarioKeys, b) })
	return fmt.Sprintf("%s is a scenario, not a case record (it has %s:; a case record has organisation:, numbers:, sources:): run or validate it as a scenario, and give its case record with --cases or its case: field",
		e.file, strings.Join(keys[:min(len(keys), 2)], ": and "))
}

func (e scenarioError) Is(target error) bool { return target == ErrScenario }

// scenarioKeys are top-level keys only a scenario has; recordKeys those
// only a case record has (both have id, title and timeline).
var (
	scenarioKeys = []string{"workload", "hypotheses", "variants", "expect", "case", "system", "topology", "comparisons", "evidence", "sizes"}
	recordKeys   = []string{"organisation", "date", "lab_system", "trigger", "numbers", "chain", "sources", "summary"}
)

// IsRecordText says whether a YAML document is a case record rather than
// a scenario: whether its top-level keys (the lines that start with one)
// include one only a case record has (organisation, date, lab_system,
// trigger, numbers, chain, sources, summary). It reads the lines, so that
// a record with a YAML mistake is still told.
func IsRecordText(data []byte) bool {
	for _, m := range topKeyRe.FindAllSubmatch(data, -1) {
		if contains(recordKeys, string(m[1])) {
			return true
		}
	}
	return false
}

var topKeyRe = regexp.MustCompile(`(?m)^([a-z_]+)\s*:`)

// isScenario says whether a document's root mapping is a scenario's: it
// has keys only a scenario has, and none only a case record has.
func isScenario(root *yaml.Node) (bool, []string) {
	if root.Kind != yaml.MappingNode {
		return false, nil
	}
	var scen []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i].Value
		if contains(recordKeys, k) {
			return false, nil
		}
		if contains(scenarioKeys, k) {
			scen = append(scen, k)
		}
	}
	return len(scen) > 0, scen
}

// Parse decodes one record strictly: unknown keys, wrong types, an empty
// document and more than one document are errors (Errors), each naming
// the file, the field path and the line, e.g. `x.yaml: numbers[2].value:
// want a number, got "40-50" (line 76)`. A scenario file is refused as one
// (errors.Is(err, ErrScenario)). Parse does not validate; call Validate.
func Parse(name string, data []byte) (Record, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Record{}, Errors{{File: name, Msg: "empty document"}}
		}
		return Record{}, syntaxError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Record{}, Errors{{File: name, Line: extra.Line, Msg: "more than one YAML document (a case record file holds one)"}}
	} else if !errors.Is(err, io.EOF) {
		return Record{}, syntaxError(name, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return Record{}, Errors{{File: name, Msg: "empty document"}}
	}
	root := doc.Content[0]
	if ok, keys := isScenario(root); ok {
		return Record{}, scenarioError{file: name, keys: keys}
	}
	w := walker{file: name}
	w.walk(root, reflect.TypeOf(Record{}), "")
	if len(w.errs) > 0 {
		return Record{}, w.errs
	}
	var r Record
	if err := root.Decode(&r); err != nil {
		return Record{}, syntaxError(name, err)
	}
	r.file = name
	r.lines = map[string]int{}
	indexLines(root, "", r.lines)
	return r, nil
}

// syntaxError is a YAML parser's (or decoder's) error as Errors, each
// message with its line taken out of the text.
func syntaxError(name string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var es Errors
	for _, m := range msgs {
		line := 0
		if sm := lineRe.FindStringSubmatch(m); sm != nil {
			line, _ = strconv.Atoi(sm[1])
			m = strings.TrimPrefix(m, sm[0])
		}
		es = append(es, &FieldError{File: name, Line: line, Msg: "parse YAML: " + m})
	}
	return es
}

var lineRe = regexp.MustCompile(`^line (\d+): `)

// walker checks a document against the Go type of a record, as the
// scenario loader does for scenarios: every problem with its line and
// field path.
type walker struct {
	file   string
	errs   Errors
	visits int
}

// maxVisits bounds the values a document expands to (aliases of aliases
// grow exponentially); a record has a few hundred.
const maxVisits = 100000

func (w *walker) add(n *yaml.Node, path, format string, args ...any) {
	w.errs = append(w.errs, &FieldError{File: w.file, Line: n.Line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if w.visits++; w.visits > maxVisits {
		if w.visits == maxVisits+1 {
			w.add(n, path, "the document expands to more than %d values (aliases of aliases?)", maxVisits)
		}
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		if t.Kind() == reflect.Float64 {
			w.add(n, path, "want a number, got nothing")
		}
		return // left empty: Validate says whether it is required
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkStruct(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.add(n, path, "want a list (\"- \" lines, or [a, b]), got %s", found(n))
			return
		}
		for i, e := range n.Content {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.add(n, path, "want a string, got %s", found(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || (n.Value != "true" && n.Value != "false") {
			w.add(n, path, "want true or false, got %s", found(n))
		}
	case reflect.Float64:
		if _, err := strconv.ParseFloat(n.Value, 64); n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || err != nil {
			w.add(n, path, "want a number, got %s%s", found(n), numberHint(n))
		}
	}
}

// walkStruct checks a mapping against a struct: every key one of its
// fields and none twice.
func (w *walker) walkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		what := "the record's fields (key: value lines)"
		if path != "" {
			what = "a mapping (key: value lines)"
		}
		w.add(n, path, "want %s, got %s", what, found(n))
		return
	}
	fields := map[string]reflect.Type{}
	var known []string
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		fields[name] = f.Type
		known = append(known, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		ft, ok := fields[k.Value]
		switch {
		case !ok:
			w.add(k, p, "unknown field (known: %s)", strings.Join(known, ", "))
			continue
		case seen[k.Value]:
			w.add(k, p, "repeated field")
			continue
		}
		seen[k.Value] = true
		w.walk(v, ft, p)
	}
}

// found names what a node holds, for an error message.
func found(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		if _, err := strconv.ParseFloat(n.Value, 64); err == nil || n.Value == "true" || n.Value == "false" {
			return fmt.Sprintf("the string %q (quoted, so not a number or true/false)", n.Value)
		}
	}
	return fmt.Sprintf("%q", n.Value)
}

var (
	rangeRe  = regexp.MustCompile(`^\s*~?[0-9][0-9.,]*\s*(-|–|to)\s*[0-9][0-9.,]*\s*\S*$`)
	approxRe = regexp.MustCompile(`(?i)^\s*(~|about|around|roughly|approximately|nearly|over|more than|some|circa|c\.)\s*[0-9]`)
	unitRe   = regexp.MustCompile(`^\s*[0-9][0-9.,]*\s*[^0-9\s.,]+`)
)

// numberHint says how to write a published figure that is not a plain
// number.
func numberHint(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return ""
	}
	switch v := n.Value; {
	case rangeRe.MatchString(v):
		return ": for a range, give one figure (its middle, say) with approx: true, and the published words in text"
	case approxRe.MatchString(v):
		return ": give the figure alone with approx: true, and the published words in text"
	case unitRe.MatchString(v):
		return ": give the figure alone, and its unit in unit"
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
