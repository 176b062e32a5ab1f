// Package seeds holds chaoslab's source incidents: one structured case record per public
// post-mortem that the lab replays against a real coordination service (ZooKeeper, etcd or
// Consul).
//
// Each record lives in a YAML file named after its case id in lower case (il-0587.yaml,
// aws-ebs-2011.yaml, ...) and is embedded in the binary. Records are decoded strictly: an
// unknown key is an error that names the file and the line. Parse and Load only decode; call
// Record.Validate to check that the required fields are present and well formed. All and Get
// return embedded records that have already passed Validate.
package seeds

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed *.yaml
var embedded embed.FS

// DateLayout is the layout of Record.Date and TimelineEntry.Date.
const DateLayout = "2006-01-02"

// LabSystems are the coordination services chaoslab replays cases on.
var LabSystems = []string{"zookeeper", "etcd", "consul"}

// SourceKinds are the allowed values of Source.Kind.
var SourceKinds = []string{"blog", "official-status", "issue", "postmortem", "case-library"}

// Record is one source incident.
type Record struct {
	ID            string   `yaml:"id" json:"id"`
	Organisation  string   `yaml:"organisation" json:"organisation"`
	Date          string   `yaml:"date" json:"date"` // YYYY-MM-DD
	Title         string   `yaml:"title" json:"title"`
	Systems       []string `yaml:"systems" json:"systems"`
	LabSystem     string   `yaml:"lab_system" json:"lab_system"` // zookeeper | etcd | consul
	Region        string   `yaml:"region" json:"region"`
	Severity      string   `yaml:"severity" json:"severity"` // as published, or "unknown"
	RootCause     string   `yaml:"root_cause" json:"root_cause"`
	Trigger       string   `yaml:"trigger" json:"trigger"`
	Scope         string   `yaml:"scope" json:"scope"`
	UsersAffected string   `yaml:"users_affected" json:"users_affected"`
	TimeToDetect  string   `yaml:"time_to_detect" json:"time_to_detect"`   // as published, "" if not
	TimeToResolve string   `yaml:"time_to_resolve" json:"time_to_resolve"` // as published, "" if not

	Timeline    []TimelineEntry `yaml:"timeline" json:"timeline"`
	Numbers     []Number        `yaml:"numbers" json:"numbers"`
	Chain       []string        `yaml:"chain" json:"chain"`
	Remediation []string        `yaml:"remediation" json:"remediation"`
	ActionItems []string        `yaml:"action_items" json:"action_items"`
	Lessons     string          `yaml:"lessons" json:"lessons"`
	Sources     []Source        `yaml:"sources" json:"sources"`
	Summary     string          `yaml:"summary" json:"summary"`
	LabNotes    string          `yaml:"lab_notes" json:"lab_notes"`
	// Training is what `chaoslab train` asks a trainee about this incident
	// (optional: without it the cause offered is the trigger).
	Training *Training `yaml:"training,omitempty" json:"training,omitempty"`

	file  string         // file name the record was parsed from
	lines map[string]int // field path -> line of its key in file
}

// TimelineEntry is one event. At is the clock as the write-up gives it, "HH:MM UTC" or
// "HH:MM PST" (24-hour), or empty when the write-up gives no clock time. Date (YYYY-MM-DD) is
// set where the day changes: an entry without one is on the same day as the entry before it,
// and the first entry defaults to the record's date. Entries are in the order of events.
type TimelineEntry struct {
	At    string `yaml:"at" json:"at"`
	Date  string `yaml:"date,omitempty" json:"date,omitempty"`
	Event string `yaml:"event" json:"event"`
	// Actions are what the responders did from this entry's time, in a form the simulator
	// replays (sim/cases), where the write-up tells it in prose.
	Actions []Action `yaml:"actions,omitempty" json:"actions,omitempty"`
}

// Action is one thing the responders did, from its timeline entry's time. Kind is one of
// ActionKinds. Until ("HH:MM UTC") is the latest time the write-up allows for it when it gives
// only a window ("during the outage"); Source quotes the write-up's words for it.
type Action struct {
	Kind   string `yaml:"kind" json:"kind"`
	Until  string `yaml:"until,omitempty" json:"until,omitempty"`
	Source string `yaml:"source" json:"source"`
}

// ActionKinds are the responders' actions a record can name for the simulator.
var ActionKinds = []string{"scale-proxies", "leader-election", "restart-fleet"}

// Training is what a trainee meets the incident with: the cause to find
// in a sentence, the explanations the responders held first, and what
// the responders did that the timeline gives no clock time for.
type Training struct {
	// Cause is the incident's cause in a sentence, in the record's own words.
	Cause string `yaml:"cause" json:"cause"`
	// Decoys are explanations the responders followed before the cause,
	// as the write-up tells them.
	Decoys []Decoy `yaml:"decoys,omitempty" json:"decoys,omitempty"`
	// Responders are the responders' actions beside the timeline's
	// (which have clock times); Kind is one of ResponderKinds.
	Responders []Responder `yaml:"responders,omitempty" json:"responders,omitempty"`
}

// Decoy is an explanation the responders followed first.
type Decoy struct {
	Text string `yaml:"text" json:"text"`
	// Held says when or how long the responders held it, as the write-up does.
	Held string `yaml:"held,omitempty" json:"held,omitempty"`
}

// Responder is one action of the responders, for a trainee's debrief.
type Responder struct {
	Kind string `yaml:"kind" json:"kind"`
	Text string `yaml:"text" json:"text"`
}

// ResponderKinds are the actions a trainee's own are matched against:
// ActionKinds and those the simulator does not replay.
var ResponderKinds = append(slices.Clone(ActionKinds), "stop-clients", "raise-memory-limit", "raise-init-limit", "remove-capacity", "add-capacity", "disable-api")

// Number is one figure the write-up publishes (or one span computed from two published clock
// times, which Text then says). Approx marks figures published as "about", "roughly", "a few
// hundred" and the like.
type Number struct {
	Name   string  `yaml:"name" json:"name"` // snake_case
	Value  float64 `yaml:"value" json:"value"`
	Unit   string  `yaml:"unit" json:"unit"`
	Approx bool    `yaml:"approx,omitempty" json:"approx,omitempty"`
	Text   string  `yaml:"text" json:"text"`
}

// Source is one public write-up of the incident and an archived copy of it.
type Source struct {
	URL      string `yaml:"url" json:"url"`
	Kind     string `yaml:"kind" json:"kind"` // one of SourceKinds
	Archived string `yaml:"archived" json:"archived"`
}

// File returns the name of the file the record was parsed from ("" if it was built in code).
func (r Record) File() string { return r.file }

// All returns every embedded record, sorted by id. It fails if any record does not parse or
// validate, if a file is not named after its id, or if two records share an id.
func All() ([]Record, error) {
	names, err := fs.Glob(embedded, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("seeds: %w", err)
	}
	var (
		recs []Record
		errs []error
		seen = map[string]string{}
	)
	for _, name := range names {
		data, err := embedded.ReadFile(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("seeds: %w", err))
			continue
		}
		r, err := Parse(name, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if want := strings.ToLower(r.ID) + ".yaml"; name != want {
			errs = append(errs, fmt.Errorf("%s: id %q wants file name %s", name, r.ID, want))
		}
		key := strings.ToUpper(r.ID)
		if other, ok := seen[key]; ok {
			errs = append(errs, fmt.Errorf("%s: id %q already used by %s", name, r.ID, other))
		}
		seen[key] = name
		recs = append(recs, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, nil
}

// Get returns the embedded record with the given id, compared without regard to case.
func Get(id string) (Record, error) {
	recs, err := All()
	if err != nil {
		return Record{}, err
	}
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		if strings.EqualFold(r.ID, strings.TrimSpace(id)) {
			return r, nil
		}
		ids = append(ids, r.ID)
	}
	return Record{}, fmt.Errorf("seeds: unknown case %q (known: %s)", id, strings.Join(ids, ", "))
}

// Load reads and parses a record file on disk. It does not validate; call Validate.
func Load(path string) (Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, fmt.Errorf("seeds: %w", err)
	}
	return Parse(filepath.Base(path), data)
}

// MaxRecordBytes bounds a case record file (the built-in ones are a few KiB).
const MaxRecordBytes = 1 << 20

// LoadFile reads, parses and validates a case record file of a user's own
// (a scenario's case: ./my-case.yaml, or a file of chaoslab's --cases
// folder). Errors name the path as given.
func LoadFile(path string) (Record, error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return Record{}, fmt.Errorf("seeds: read case record: %w", err)
	case !st.Mode().IsRegular():
		return Record{}, fmt.Errorf("seeds: read case record: %s is not a regular file", path)
	case st.Size() > MaxRecordBytes:
		return Record{}, fmt.Errorf("seeds: read case record: %s is %d bytes, more than a case record's %d", path, st.Size(), MaxRecordBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, fmt.Errorf("seeds: read case record: %w", err)
	}
	r, err := Parse(path, data)
	if err != nil {
		return Record{}, err
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// Parse decodes one record strictly: unknown keys, wrong types, an empty document and more
// than one document are errors. Errors are prefixed with name and carry yaml's "line N".
// Parse does not validate; call Validate.
func Parse(name string, data []byte) (Record, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var r Record
	if err := dec.Decode(&r); err != nil {
		if errors.Is(err, io.EOF) {
			return Record{}, fmt.Errorf("%s: empty document", name)
		}
		return Record{}, wrapYAMLError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Record{}, fmt.Errorf("%s: line %d: more than one YAML document", name, extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return Record{}, wrapYAMLError(name, err)
	}

	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Record{}, wrapYAMLError(name, err)
	}
	r.file = name
	r.lines = map[string]int{}
	if len(doc.Content) == 1 {
		indexLines(doc.Content[0], "", r.lines)
	}
	return r, nil
}

// wrapYAMLError puts the file name in front of each message of a yaml error.
func wrapYAMLError(name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		errs := make([]error, 0, len(te.Errors))
		for _, e := range te.Errors {
			errs = append(errs, fmt.Errorf("%s: %s", name, e))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
}

// indexLines records the line of every mapping key and sequence item under n, keyed by field
// path ("sources[0].archived"); a mapping or sequence value is keyed by its own path too.
func indexLines(n *yaml.Node, path string, lines map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			lines[p] = k.Line
			indexLines(v, p, lines)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[p] = item.Line
			indexLines(item, p, lines)
		}
	}
}

var (
	nameRe  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	clockRe = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9] (UTC|PST|PDT)$`)

	blankLineRe = regexp.MustCompile(`\n\s*\n`)
)

// Validate checks the required fields and the form of the others. It returns every problem
// found, joined, each naming the file and the field path (and the line when the key is in
// the file), e.g. "il-0587.yaml: sources[0].archived: required (line 120)".
func (r Record) Validate() error {
	v := validator{r: r}

	v.required("id", r.ID)
	v.required("organisation", r.Organisation)
	if v.required("date", r.Date) {
		if _, err := time.Parse(DateLayout, r.Date); err != nil {
			v.fail("date", "not a YYYY-MM-DD date: %q", r.Date)
		}
	}
	v.required("title", r.Title)
	if len(r.Systems) == 0 {
		v.fail("systems", "required")
	}
	for i, s := range r.Systems {
		v.required(fmt.Sprintf("systems[%d]", i), s)
	}
	if v.required("lab_system", r.LabSystem) && !contains(LabSystems, r.LabSystem) {
		v.fail("lab_system", "%q is not one of %s", r.LabSystem, strings.Join(LabSystems, ", "))
	}
	v.required("trigger", r.Trigger)

	for i, t := range r.Timeline {
		p := fmt.Sprintf("timeline[%d]", i)
		if t.At != "" && !clockRe.MatchString(t.At) {
			v.fail(p+".at", `not "HH:MM UTC" or "HH:MM PST": %q`, t.At)
		}
		if t.Date != "" {
			if _, err := time.Parse(DateLayout, t.Date); err != nil {
				v.fail(p+".date", "not a YYYY-MM-DD date: %q", t.Date)
			}
		}
		v.required(p+".event", t.Event)
		for j, a := range t.Actions {
			q := fmt.Sprintf("%s.actions[%d]", p, j)
			if v.required(q+".kind", a.Kind) && !contains(ActionKinds, a.Kind) {
				v.fail(q+".kind", "%q is not one of %s", a.Kind, strings.Join(ActionKinds, ", "))
			}
			if a.Until != "" && !clockRe.MatchString(a.Until) {
				v.fail(q+".until", `not "HH:MM UTC" or "HH:MM PST": %q`, a.Until)
			}
			if t.At == "" {
				v.fail(q, "an action needs its entry's clock time (at)")
			}
			v.required(q+".source", a.Source)
		}
	}

	v.training(r.Training)
	if len(r.Chain) == 0 {
		v.fail("chain", "required")
	}
	for i, s := range r.Chain {
		v.required(fmt.Sprintf("chain[%d]", i), s)
	}

	if len(r.Numbers) == 0 {
		v.fail("numbers", "required")
	}
	names := map[string]int{}
	for i, n := range r.Numbers {
		p := fmt.Sprintf("numbers[%d]", i)
		if v.required(p+".name", n.Name) {
			if !nameRe.MatchString(n.Name) {
				v.fail(p+".name", "not snake_case: %q", n.Name)
			}
			if j, dup := names[n.Name]; dup {
				v.fail(p+".name", "%q repeats numbers[%d].name", n.Name, j)
			}
			names[n.Name] = i
		}
		v.required(p+".unit", n.Unit)
		v.required(p+".text", n.Text)
	}

	if len(r.Sources) == 0 {
		v.fail("sources", "required")
	}
	for i, s := range r.Sources {
		p := fmt.Sprintf("sources[%d]", i)
		if v.required(p+".url", s.URL) && !strings.HasPrefix(s.URL, "https://") {
			v.fail(p+".url", "must start with https://: %q", s.URL)
		}
		if s.Kind != "" && !contains(SourceKinds, s.Kind) {
			v.fail(p+".kind", "%q is not one of %s", s.Kind, strings.Join(SourceKinds, ", "))
		}
		if v.required(p+".archived", s.Archived) && !strings.HasPrefix(s.Archived, "https://") {
			v.fail(p+".archived", "must start with https://: %q", s.Archived)
		}
	}

	v.required("summary", r.Summary)
	return errors.Join(v.errs...)
}

type validator struct {
	r    Record
	errs []error
}

// required reports path as missing when s is blank, and says whether it was present.
func (v *validator) required(path, s string) bool {
	if strings.TrimSpace(s) == "" {
		v.fail(path, "required")
		return false
	}
	return true
}

func (v *validator) fail(path, format string, args ...any) {
	msg := fmt.Sprintf("%s: %s: %s", v.r.fileName(), path, fmt.Sprintf(format, args...))
	if line := v.r.lineOf(path); line > 0 {
		msg += fmt.Sprintf(" (line %d)", line)
	}
	v.errs = append(v.errs, errors.New(msg))
}

func (r Record) fileName() string {
	switch {
	case r.file != "":
		return r.file
	case r.ID != "":
		return strings.ToLower(r.ID) + ".yaml"
	default:
		return "record"
	}
}

// lineOf returns the line of path's key or, when the key is absent, of the nearest enclosing
// list item or field present in the file; 0 when nothing is known.
func (r Record) lineOf(path string) int {
	for p := path; p != ""; {
		if line, ok := r.lines[p]; ok {
			return line
		}
		cut := strings.LastIndexAny(p, ".[")
		if cut < 0 {
			break
		}
		p = p[:cut]
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Width is the column Format wraps its prose at.
const Width = 100

// Format writes a plain-text rendering of the record for `chaoslab show`.
func (r Record) Format(w io.Writer) error {
	var b strings.Builder
	rule := strings.Repeat("=", min(Width, max(len(r.ID)+2+len(r.Title), 20)))

	fmt.Fprintf(&b, "%s\n", wrap(r.ID+"  ", r.Title, Width, strings.Repeat(" ", len(r.ID)+2)))
	fmt.Fprintf(&b, "%s\n", rule)
	field := func(label, value string) {
		if strings.TrimSpace(value) == "" {
			return
		}
		const pad = 17
		b.WriteString(wrap(fmt.Sprintf("%-*s", pad, label+":"), value, Width, strings.Repeat(" ", pad)))
		b.WriteByte('\n')
	}
	field("Organisation", r.Organisation)
	field("Date", r.Date)
	field("Region", r.Region)
	field("Systems", strings.Join(r.Systems, ", "))
	field("Lab system", r.LabSystem)
	field("Severity", r.Severity)
	field("Root cause", r.RootCause)
	field("Time to detect", orNotPublished(r.TimeToDetect))
	field("Time to resolve", orNotPublished(r.TimeToResolve))
	field("Scope", r.Scope)
	field("Users affected", r.UsersAffected)

	section := func(title string) { fmt.Fprintf(&b, "\n%s\n%s\n", title, strings.Repeat("-", len(title))) }
	para := func(s string) {
		for i, p := range paragraphs(s) {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(wrap("", p, Width, ""))
			b.WriteByte('\n')
		}
	}
	list := func(items []string, numbered bool) {
		for i, it := range items {
			mark := "- "
			if numbered {
				mark = fmt.Sprintf("%d. ", i+1)
			}
			if numbered && len(items) >= 10 && i < 9 {
				mark = " " + mark
			}
			b.WriteString(wrap(mark, it, Width, strings.Repeat(" ", len(mark))))
			b.WriteByte('\n')
		}
	}

	section("Trigger")
	para(r.Trigger)

	if len(r.Timeline) > 0 {
		section("Timeline")
		r.formatTimeline(&b)
	}

	if len(r.Numbers) > 0 {
		section("Numbers")
		r.formatNumbers(&b)
	}

	if len(r.Chain) > 0 {
		section("Causal chain")
		list(r.Chain, true)
	}
	if len(r.Remediation) > 0 {
		section("Remediation")
		list(r.Remediation, false)
	}
	if len(r.ActionItems) > 0 {
		section("Action items")
		list(r.ActionItems, false)
	}
	if strings.TrimSpace(r.Lessons) != "" {
		section("Lessons")
		para(r.Lessons)
	}
	if len(r.Sources) > 0 {
		section("Sources")
		r.formatSources(&b)
	}
	if strings.TrimSpace(r.Summary) != "" {
		section("Summary")
		para(r.Summary)
	}
	if strings.TrimSpace(r.LabNotes) != "" {
		section("Lab notes")
		para(r.LabNotes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatTimeline writes the timeline: clock times in a column; an entry
// on another day than the record's date preceded by a line naming that
// day; without any clock time, a list.
func (r Record) formatTimeline(b *strings.Builder) {
	// Clock times sit in a column; an entry on another day than the record's date is
	// preceded by a line naming that day. Without any clock time the entries are a list.
	atw := 0
	for _, t := range r.Timeline {
		atw = max(atw, len(t.At))
	}
	day := r.Date
	for _, t := range r.Timeline {
		if t.Date != "" && t.Date != day {
			day = t.Date
			fmt.Fprintf(b, "On %s:\n", day)
		}
		head := "- "
		if atw > 0 {
			at := t.At
			if at == "" {
				at = "--:--"
			}
			head = fmt.Sprintf("%-*s  ", atw, at)
		}
		b.WriteString(wrap(head, t.Event, Width, strings.Repeat(" ", len(head))))
		b.WriteByte('\n')
	}
}

// formatSources writes the sources, a line each; URLs are never broken
// across lines, so that they can be copied whole.
func (r Record) formatSources(b *strings.Builder) {
	for _, s := range r.Sources {
		kind := s.Kind
		if kind == "" {
			kind = "source"
		}
		fmt.Fprintf(b, "- [%s] %s\n", kind, s.URL)
		if s.Archived != "" {
			fmt.Fprintf(b, "  archived: %s\n", s.Archived)
		}
	}
}

// formatNumbers writes the numbers as a table with a wrapped text column.
func (r Record) formatNumbers(b *strings.Builder) {
	nw, vw, uw := len("name"), len("value"), len("unit")
	vals := make([]string, len(r.Numbers))
	for i, n := range r.Numbers {
		vals[i] = formatValue(n)
		nw, vw, uw = max(nw, len(n.Name)), max(vw, len(vals[i])), max(uw, len(n.Unit))
	}
	head := fmt.Sprintf("%-*s  %*s  %-*s  ", nw, "name", vw, "value", uw, "unit")
	indent := strings.Repeat(" ", len(head))
	if len(indent) > Width-30 { // keep room for the text column
		indent = "    "
	}
	b.WriteString(head + "what it measures\n")
	for i, n := range r.Numbers {
		row := fmt.Sprintf("%-*s  %*s  %-*s  ", nw, n.Name, vw, vals[i], uw, n.Unit)
		b.WriteString(wrap(row, n.Text, Width, indent))
		b.WriteByte('\n')
	}
}

func orNotPublished(s string) string {
	if strings.TrimSpace(s) == "" {
		return "not published"
	}
	return s
}

func formatValue(n Number) string {
	s := strconv.FormatFloat(n.Value, 'f', -1, 64)
	if n.Approx {
		s = "~" + s
	}
	return s
}

// paragraphs splits s at blank lines and joins the lines of each paragraph.
func paragraphs(s string) []string {
	var out []string
	for _, p := range blankLineRe.Split(strings.TrimSpace(s), -1) {
		if p = oneLine(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// wrap lays text out after prefix, wrapping at width columns and starting each later line
// with indent. prefix is kept verbatim (it may hold alignment spaces); text is split into
// words. A word longer than a line (a URL, say) gets a line of its own and is never broken.
func wrap(prefix, text string, width int, indent string) string {
	var b strings.Builder
	line := prefix
	fresh := true // nothing but prefix or indent on the line yet
	for _, word := range strings.Fields(text) {
		switch {
		case fresh:
			line += word
			fresh = false
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			b.WriteString(line)
			b.WriteByte('\n')
			line = indent + word
		}
	}
	b.WriteString(strings.TrimRight(line, " "))
	return b.String()
}

func (v *validator) training(t *Training) {
	if t == nil {
		return
	}
	v.required("training.cause", t.Cause)
	for i, d := range t.Decoys {
		v.required(fmt.Sprintf("training.decoys[%d].text", i), d.Text)
	}
	for i, a := range t.Responders {
		q := fmt.Sprintf("training.responders[%d]", i)
		if v.required(q+".kind", a.Kind) && !contains(ResponderKinds, a.Kind) {
			v.fail(q+".kind", "%q is not one of %s", a.Kind, strings.Join(ResponderKinds, ", "))
		}
		v.required(q+".text", a.Text)
	}
}
