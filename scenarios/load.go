package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/record"
)

//go:embed *.yaml
var builtin embed.FS

// FieldError is a problem at one place of a scenario file.
type FieldError struct {
	File  string
	Line  int
	Field string // path such as timeline.faults[0].target
	Msg   string
}

func (e *FieldError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Errors is every problem found in one file.
type Errors []*FieldError

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data)
}

// Builtin returns the scenarios shipped with chaoslab, sorted by id.
func Builtin() ([]*Scenario, error) {
	names, err := fs.Glob(builtin, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	var errs []error
	for _, n := range names {
		data, err := builtin.ReadFile(n)
		if err != nil {
			return nil, err
		}
		s, err := Parse(filepath.Join("scenarios", n), data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errs...)
}

// Find returns a built-in scenario by id, or loads ref as a file when it is a path.
func Find(ref string) (*Scenario, error) {
	if strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml") || strings.ContainsRune(ref, os.PathSeparator) {
		return Load(ref)
	}
	all, err := Builtin()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range all {
		if strings.EqualFold(s.ID, ref) || strings.EqualFold(s.Case, ref) {
			return s, nil
		}
		ids = append(ids, s.ID)
	}
	return nil, fmt.Errorf("find scenario: no scenario %q (known: %s)", ref, strings.Join(ids, ", "))
}

// CaseChecker reports whether a case record exists; set by the caller that
// knows the case records (the seeds package) to keep this package free of it.
var CaseChecker func(id string) error

// Parse decodes and validates a scenario. Every problem names file:line and
// the field path; unknown fields are rejected.
func Parse(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	syntaxErr := func(err error) error {
		line, msg := diagnoseSyntax(data, err)
		return Errors{{File: file, Line: line, Msg: "parse YAML: " + msg}}
	}
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: file, Msg: "empty document"}}
		}
		return nil, syntaxErr(err)
	}
	// A stray "---" would start a second document that nothing reads.
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, syntaxErr(err)
		}
		if len(extra.Content) > 0 && extra.Content[0].ShortTag() != "!!null" {
			return nil, Errors{{File: file, Line: extra.Line, Msg: "a second YAML document starts here; a scenario file holds one"}}
		}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, Errors{{File: file, Msg: "empty document"}}
	}
	root := doc.Content[0]
	s, errs := parseRoot(file, root)
	if errs != nil {
		return nil, errs
	}
	s.root = root
	// Every size is checked as it would run.
	for _, name := range s.SizeNames() {
		if _, err := s.Sized(name); err != nil {
			var es Errors
			if !errors.As(err, &es) {
				es = Errors{{File: file, Field: "sizes." + name, Msg: err.Error()}}
			}
			errs = append(errs, es...)
		}
	}
	if errs != nil {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, errs
	}
	return s, nil
}

// parseRoot checks and decodes a scenario's root mapping; every problem
// names file:line and the field path.
func parseRoot(file string, root *yaml.Node) (*Scenario, Errors) {
	c := &checker{file: file}
	c.walk(root, reflect.TypeOf(Scenario{}), "")
	c.walkPlugins(root)
	if len(c.errs) > 0 {
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
		return nil, c.errs
	}
	var s Scenario
	if err := root.Decode(&s); err != nil {
		return nil, Errors{{File: file, Line: yamlErrLine(err), Msg: err.Error()}}
	}
	s.Source = file
	c.validate(&s, root)
	if len(c.errs) > 0 {
		// Map iteration (variants, expect) has no order: report in file order.
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
		return nil, c.errs
	}
	return &s, nil
}

type checker struct {
	file   string
	errs   Errors
	visits int // values walked, aliases expanded
}

// maxVisits bounds the values a document expands to: a scenario has a few
// hundred, and aliases of aliases grow exponentially.
const maxVisits = 100000

func (c *checker) add(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	c.errs = append(c.errs, &FieldError{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var (
	durationType = reflect.TypeOf(Duration(0))
	nodeType     = reflect.TypeOf(yaml.Node{})
)

// walk checks node against the Go type t: unknown keys, wrong kinds and
// malformed scalars are reported with their line and path.
func (c *checker) walk(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if c.visits++; c.visits > maxVisits {
		if c.visits == maxVisits+1 {
			c.add(n, path, "the document expands to more than %d values (aliases of aliases?)", maxVisits)
		}
		return
	}
	if n.Tag == "!!null" {
		return
	}
	switch {
	case t == nodeType:
		return
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			c.add(n, path, "want a duration like 10s")
			return
		}
		c.duration(n, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		c.walkStruct(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.add(n, path, "want a mapping")
			return
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if seen[k.Value] {
				c.add(k, join(path, k.Value), "repeated key")
				continue
			}
			seen[k.Value] = true
			c.walk(n.Content[i+1], t.Elem(), join(path, k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.add(n, path, "want a list")
			return
		}
		for i, e := range n.Content {
			c.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			c.add(n, path, "want a string")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || (n.Value != "true" && n.Value != "false") {
			c.add(n, path, "want true or false, got %s", found(n))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if _, err := strconv.ParseInt(n.Value, 10, 64); n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil {
			c.add(n, path, "want a whole number, got %s", found(n))
		}
	case reflect.Float64, reflect.Float32:
		if _, err := strconv.ParseFloat(n.Value, 64); n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || err != nil {
			c.add(n, path, "want a number, got %s", found(n))
		}
	}
}

// walkStruct checks a mapping against a struct: every key one of its
// fields, none twice, the required ones there, each value in turn.
func (c *checker) walkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.add(n, path, "want a mapping")
		return
	}
	fields := map[string]reflect.StructField{}
	var known []string
	for _, f := range yamlFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f
		known = append(known, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		f, ok := fields[k.Value]
		if !ok {
			c.add(k, p, "unknown field (known: %s)", strings.Join(known, ", "))
			continue
		}
		if seen[k.Value] {
			c.add(k, p, "repeated field")
		}
		seen[k.Value] = true
		c.walk(v, f.Type, p)
	}
	c.required(n, t, path, seen)
}

// duration checks a duration's form as the schema gives it
// (DurationPattern, or 0) and its range.
func (c *checker) duration(n *yaml.Node, path string) {
	d, err := time.ParseDuration(n.Value)
	switch {
	case n.Value == "0":
	case err != nil:
		c.add(n, path, "not a duration (like 10s or 1m30s): %q", n.Value)
	case d < 0:
		c.add(n, path, "%q is negative: a duration is 0s or more", n.Value)
	case !durationRE.MatchString(n.Value):
		c.add(n, path, "not a duration (like 10s or 1m30s): %q", n.Value)
	case d > lab.MaxDuration:
		c.add(n, path, "%s is more than %s: a replay of an outage, not a soak test", n.Value, lab.MaxDuration)
	}
}

var durationRE = regexp.MustCompile(DurationPattern)

// required reports the keys of a struct that the schema requires
// (jsonschema:"required") and the mapping n lacks, at n's line.
func (c *checker) required(n *yaml.Node, t reflect.Type, path string, seen map[string]bool) {
	for _, f := range yamlFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if seen[name] || !slices.Contains(strings.Split(f.Tag.Get("jsonschema"), ","), "required") {
			continue
		}
		msg := "required"
		if h, ok := requiredHints[join(strings.TrimRightFunc(path, isIndex), name)]; ok {
			msg += ": " + h
		}
		c.add(n, join(path, name), "%s", msg)
	}
}

// isIndex is true for the characters of a list index ("[0]").
func isIndex(r rune) bool { return r == ']' || r == '[' || (r >= '0' && r <= '9') }

// requiredHints say what a missing key is for.
var requiredHints = map[string]string{
	"id":                       "the scenario's name, like il-0587-zk-treecache-reconnect-storm",
	"case":                     "the case record it replays: a built-in id (IL-0587) or a path to your own record file",
	"system":                   "the system under test (zookeeper, etcd or consul)",
	"workload":                 "the clients' workload: its kind and the kind's settings",
	"timeline":                 "warmup, faults and observe",
	"variants":                 "at least one variant, each with a description",
	"hypotheses":               "at least one property to judge each variant by",
	"expect":                   "the verdict each variant should reach (held or violated)",
	"timeline.warmup":          "how long the workload runs before the first fault (like 30s)",
	"timeline.faults":          "at least one fault step",
	"timeline.observe":         "how long measuring goes on after the last fault ends (like 30s)",
	"timeline.faults.duration": "how long the fault lasts (like 15s)",
}

// yamlFields are a struct's fields as YAML keys, with ",inline" embedded
// structs flattened.
func yamlFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			out = append(out, yamlFields(f.Type)...)
			continue
		}
		out = append(out, f)
	}
	return out
}

// found names what a node holds for an error message.
func found(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.ShortTag() == "!!str" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		if _, err := strconv.ParseFloat(n.Value, 64); err == nil || n.Value == "true" || n.Value == "false" {
			return fmt.Sprintf("the string %q", n.Value) // quoted, so not a number or a bool
		}
	}
	return fmt.Sprintf("%q", n.Value)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// lookup finds the node at a dotted path (with [i] indexes) for its line.
func lookup(root *yaml.Node, path string) *yaml.Node {
	n := root
	for _, part := range strings.Split(path, ".") {
		idx := -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
			part = part[:i]
		}
		if n.Kind != yaml.MappingNode {
			return n
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return n
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return n
			}
			n = n.Content[idx]
		}
	}
	return n
}

var (
	verdictNames = []string{"held", "violated"}
	opNames      = []string{"<", "<=", ">", ">=", "=="}
)

func yamlErrLine(err error) int {
	msg := err.Error()
	i := strings.Index(msg, "line ")
	if i < 0 {
		return 0
	}
	j := i + 5
	for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(msg[i+5 : j])
	return n
}

// ReadBuiltin returns the source text of a built-in scenario file.
func ReadBuiltin(name string) ([]byte, error) { return builtin.ReadFile(name) }

// OfRecord is the scenario a record was run from, parsed again from the
// source text it keeps, at the size it was run at.
func OfRecord(r *record.Report) (*Scenario, error) {
	if r.ScenarioYAML == "" || r.Scenario == nil {
		return nil, errors.New("the record keeps no scenario")
	}
	s, err := Parse(r.Scenario.Source, []byte(r.ScenarioYAML))
	if err == nil {
		s, err = s.Sized(r.Scenario.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("the record's scenario: %w", err)
	}
	return s, nil
}

// Info is what a record keeps of the scenario.
func (s *Scenario) Info() *record.ScenarioInfo {
	in := &record.ScenarioInfo{ID: s.ID, Title: s.Title, Description: s.Description, Case: s.Case, Source: s.Source, Size: s.Size}
	for name, sz := range s.Sizes {
		if in.Sizes == nil {
			in.Sizes = map[string]record.Size{}
		}
		rs := record.Size{Description: sz.Description}
		for _, b := range sz.Bounds {
			rs.Bounds = append(rs.Bounds, record.Bound{Hypothesis: b.Hypothesis, Threshold: b.Threshold, Why: b.Why})
		}
		in.Sizes[name] = rs
	}
	in.Plan = &record.Plan{WarmupS: s.Timeline.Warmup.D().Seconds(), ObserveS: s.Timeline.Observe.D().Seconds()}
	for _, f := range s.Timeline.Faults {
		in.Plan.Faults = append(in.Plan.Faults, record.PlannedStep{Fault: f.Fault, Target: f.Target, AtS: f.At.D().Seconds(), DurationS: f.Duration.D().Seconds()})
	}
	return in
}

// PlanOf is a record's plan: the one it keeps, or its scenario's parsed
// again (a record written before it kept one).
func PlanOf(r *record.Report) (*record.Plan, error) {
	if r.Scenario != nil && r.Scenario.Plan != nil {
		return r.Scenario.Plan, nil
	}
	s, err := OfRecord(r)
	if err != nil {
		return nil, err
	}
	return s.Info().Plan, nil
}
