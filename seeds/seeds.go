// Package seeds holds chaoslab's source incidents: one structured case record per public
// post-mortem that the lab replays against a real coordination service (ZooKeeper, etcd or
// Consul).
//
// Each record lives in a YAML file named after its case id in lower case (il-0587.yaml,
// aws-ebs-2011.yaml, ...) and is embedded in the binary. Records are decoded strictly: an
// unknown key or a wrong type is an error that names the file, the field path and the line.
// The format is documented in reference.md and schema.json. Parse and Load only decode; call
// Record.Validate to check that the required fields are present and well formed. All and Get
// return embedded records that have already passed Validate; Get and Known also know the
// records of a user's own (Register, LoadFile).
package seeds

import (
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

// SourceKinds are the allowed values of Source.Kind; SourceKindDocs says
// what each is.
var SourceKinds = []string{"postmortem", "blog", "official-status", "issue", "pull-request", "mailing-list", "case-library"}

// SourceKindDocs says what each of SourceKinds is.
var SourceKindDocs = map[string]string{
	"postmortem":      "a post-mortem or incident report published by the organisation (a page of its own)",
	"blog":            "a post on the organisation's (or an engineer's) blog telling the incident",
	"official-status": "a status page entry or an official statement (AWS's \"Summary of the ... Service Event\")",
	"issue":           "an issue in a public tracker (GitHub, GitLab, Jira) about the incident or the defect behind it",
	"pull-request":    "a pull request or merge request that fixes the defect or tells how it behaved",
	"mailing-list":    "a post on a public mailing list (a project's user or dev list, an announcement list), best linked at the list's archive",
	"case-library":    "an entry of a library of incident cases that summarises the write-up",
}

// Record is one source incident: what a public write-up says happened,
// in fields a report, the simulator and a training session read.
type Record struct {
	// ID is the case's id, as commands take it (in any case): IL-0587,
	// AWS-EBS-2011, or one of yours such as ACME-2024-03. A scenario names
	// it in its case: key.
	ID string `yaml:"id" json:"id" jsonschema:"required,minLength=1"`
	// Organisation is who had the incident (usually who published the
	// write-up).
	Organisation string `yaml:"organisation" json:"organisation" jsonschema:"required,minLength=1"`
	// Date is the day the incident began, YYYY-MM-DD. The first timeline
	// entry is on it unless the entry gives its own date.
	Date string `yaml:"date" json:"date" jsonschema:"required"`
	// Title is the incident in a sentence: what failed, and what that did to
	// whom.
	Title string `yaml:"title" json:"title" jsonschema:"required,minLength=1"`
	// Systems are the software involved, as the write-up names it
	// (zookeeper, apache-curator, kubernetes), at least one.
	Systems []string `yaml:"systems" json:"systems" jsonschema:"required,minItems=1"`
	// LabSystem is the coordination service the lab replays the incident
	// on.
	LabSystem string `yaml:"lab_system" json:"lab_system" jsonschema:"required"`
	// Region is where it happened (a cloud region, a data centre), as
	// published; empty if not.
	Region string `yaml:"region" json:"region"`
	// Severity is the severity as published, or unknown.
	Severity string `yaml:"severity" json:"severity"`
	// RootCause is the kind of cause in a few words (software-defect,
	// capacity-exhaustion, configuration-change).
	RootCause string `yaml:"root_cause" json:"root_cause"`
	// Trigger is what set the incident off, in a sentence or two.
	Trigger string `yaml:"trigger" json:"trigger" jsonschema:"required,minLength=1"`
	// Scope is what was affected and how badly.
	Scope string `yaml:"scope" json:"scope"`
	// UsersAffected is who was affected, as published ("" if not).
	UsersAffected string `yaml:"users_affected" json:"users_affected"`
	// TimeToDetect is the time to detect as published (26m, 0m), or "" when
	// the write-up gives none.
	TimeToDetect string `yaml:"time_to_detect" json:"time_to_detect"`
	// TimeToResolve is the time to resolve as published (3h 54m), or "" when
	// the write-up gives none.
	TimeToResolve string `yaml:"time_to_resolve" json:"time_to_resolve"`

	// Timeline is the events in the order they happened, each with its
	// clock time when the write-up gives one.
	Timeline []TimelineEntry `yaml:"timeline" json:"timeline"`
	// Numbers are the figures the write-up publishes, at least one; reports
	// print them beside what the lab measured.
	Numbers []Number `yaml:"numbers" json:"numbers" jsonschema:"required,minItems=1"`
	// Chain is the causal chain, one link a line, from the trigger to the
	// outage, at least one.
	Chain []string `yaml:"chain" json:"chain" jsonschema:"required,minItems=1"`
	// Remediation is what the responders did to end the incident.
	Remediation []string `yaml:"remediation" json:"remediation"`
	// ActionItems are what the write-up says will change afterwards.
	ActionItems []string `yaml:"action_items" json:"action_items"`
	// Lessons are the write-up's (or your) lessons, in prose.
	Lessons string `yaml:"lessons" json:"lessons"`
	// Sources are the public write-ups of the incident, at least one.
	Sources []Source `yaml:"sources" json:"sources" jsonschema:"required,minItems=1"`
	// Summary is the incident in two or three paragraphs of your own words
	// (paragraphs are separated by a blank line).
	Summary string `yaml:"summary" json:"summary" jsonschema:"required,minLength=1"`
	// LabNotes say how the lab replays the incident and what it leaves out.
	LabNotes string `yaml:"lab_notes" json:"lab_notes"`
	// Training is what chaoslab train asks a trainee about this incident
	// (optional: without it the cause offered is the trigger).
	Training *Training `yaml:"training,omitempty" json:"training,omitempty"`

	file    string         // file name the record was parsed from
	lines   map[string]int // field path -> line of its key in file
	builtin bool           // one of the records embedded in the binary
}

// TimelineEntry is one event. At is the clock as the write-up gives it, "HH:MM UTC" or
// "HH:MM PST" (24-hour), or empty when the write-up gives no clock time. Date (YYYY-MM-DD) is
// set where the day changes: an entry without one is on the same day as the entry before it,
// and the first entry defaults to the record's date. Entries are in the order of events.
type TimelineEntry struct {
	// At is the clock time as the write-up gives it, 24-hour, with its zone:
	// "09:35 UTC", "05:15 PST" or "10:07 PDT"; "" when the write-up gives
	// none.
	At string `yaml:"at" json:"at"`
	// Date is the entry's day, YYYY-MM-DD, where the day changes; without it
	// the entry is on the day of the entry before it (the first: the
	// record's date).
	Date string `yaml:"date,omitempty" json:"date,omitempty"`
	// Event is what happened, in a sentence or two.
	Event string `yaml:"event" json:"event" jsonschema:"required,minLength=1"`
	// Actions are what the responders did from this entry's time, in a form
	// the simulator replays (sim/cases), where the write-up tells it in
	// prose; the entry needs a clock time (at).
	Actions []Action `yaml:"actions,omitempty" json:"actions,omitempty"`
	// Reveals marks an entry that gives away an answer a trainee is asked
	// for (chaoslab train): "outcome" (what the incident did next: shown
	// once the trainee has predicted it) or "cause" (why: shown once the
	// trainee has given a diagnosis); either is shown when the run ends.
	Reveals string `yaml:"reveals,omitempty" json:"reveals,omitempty" jsonschema:"enum=outcome,enum=cause"`
}

// RevealKinds are what a timeline entry may give away.
var RevealKinds = []string{"outcome", "cause"}

// Action is one thing the responders did, from its timeline entry's time. Kind is one of
// ActionKinds. Until ("HH:MM UTC") is the latest time the write-up allows for it when it gives
// only a window ("during the outage"); Source quotes the write-up's words for it.
type Action struct {
	// Kind is what the responders did, in the simulator's terms.
	Kind string `yaml:"kind" json:"kind" jsonschema:"required"`
	// Until is the latest clock time the write-up allows for it ("13:02
	// UTC") when it gives only a window ("during the outage").
	Until string `yaml:"until,omitempty" json:"until,omitempty"`
	// Source quotes the write-up's words for it.
	Source string `yaml:"source" json:"source" jsonschema:"required,minLength=1"`
}

// ActionKinds are the responders' actions a record can name for the simulator.
var ActionKinds = []string{"scale-proxies", "leader-election", "restart-fleet"}

// Training is what a trainee meets the incident with: the cause to find
// in a sentence, the explanations the responders held first, and what
// the responders did that the timeline gives no clock time for.
type Training struct {
	// Cause is the incident's cause in a sentence, in the record's own words.
	Cause string `yaml:"cause" json:"cause" jsonschema:"required,minLength=1"`
	// Decoys are explanations the responders followed before the cause,
	// as the write-up tells them.
	Decoys []Decoy `yaml:"decoys,omitempty" json:"decoys,omitempty"`
	// Responders are the responders' actions beside the timeline's
	// (which have clock times), for the debrief.
	Responders []Responder `yaml:"responders,omitempty" json:"responders,omitempty"`
}

// Decoy is an explanation the responders followed first, or one a
// responder could have chased from what they saw.
type Decoy struct {
	// Text is the explanation, in a sentence.
	Text string `yaml:"text" json:"text" jsonschema:"required,minLength=1"`
	// Held says when or how long the responders held it, as the write-up
	// does ("" for one the write-up names as a signal but not as held).
	Held string `yaml:"held,omitempty" json:"held,omitempty"`
	// Signal is what in the measurements points at it (a chart a trainee
	// sees), so that it can be chased and ruled out.
	Signal string `yaml:"signal,omitempty" json:"signal,omitempty"`
}

// Responder is one action of the responders, for a trainee's debrief.
type Responder struct {
	// Kind is the action, which a trainee's own are matched against.
	Kind string `yaml:"kind" json:"kind" jsonschema:"required"`
	// Text is what the responders did, in a sentence.
	Text string `yaml:"text" json:"text" jsonschema:"required,minLength=1"`
}

// ResponderKinds are the actions a trainee's own are matched against:
// ActionKinds and those the simulator does not replay.
var ResponderKinds = append(slices.Clone(ActionKinds), "stop-clients", "raise-memory-limit", "raise-init-limit", "remove-capacity", "add-capacity", "disable-api")

// KindDocs says what each of ActionKinds and ResponderKinds is.
var KindDocs = map[string]string{
	"scale-proxies":      "add proxies (or other clients' servers) to take the load",
	"leader-election":    "force a new leader election in the coordination service",
	"restart-fleet":      "restart a fleet of servers, a batch at a time",
	"stop-clients":       "cut the coordination service off from its clients until it is healthy, then let them back",
	"raise-memory-limit": "raise a process's or pod's memory limit",
	"raise-init-limit":   "raise ZooKeeper's initLimit (the time a follower has to sync with the leader)",
	"remove-capacity":    "take servers added before the incident out again",
	"add-capacity":       "add servers or storage so the load finds room",
	"disable-api":        "turn off an API (or a kind of request) to shed load",
}

// Number is one figure the write-up publishes, or a span computed from two published clock
// times (which its text then names). Approx marks figures published as "about", "roughly", "a
// few hundred" and the like.
type Number struct {
	// Name is the figure's name in snake_case (full_outage_duration), unique
	// in the record; a scenario's evidence names it.
	Name string `yaml:"name" json:"name" jsonschema:"required"`
	// Value is the figure as one number (20, 0.07, 10000); a range or "about
	// N" is one value with approx: true.
	Value float64 `yaml:"value" json:"value" jsonschema:"required"`
	// Unit is what the value counts: count (a plain count), minutes, hours,
	// days, percent, times, MB, GB, or snake_case words (servers_per_hour).
	Unit string `yaml:"unit" json:"unit" jsonschema:"required,minLength=1"`
	// Approx marks a figure published as "about", "roughly", "a few hundred"
	// or a range.
	Approx bool `yaml:"approx,omitempty" json:"approx,omitempty"`
	// Text says what the figure measures, in the write-up's terms (and, for
	// a span computed from two clock times, which two).
	Text string `yaml:"text" json:"text" jsonschema:"required,minLength=1"`
}

// Source is one public write-up of the incident and, when there is one,
// an archived copy of it.
type Source struct {
	// URL is the write-up's address, https.
	URL string `yaml:"url" json:"url" jsonschema:"required"`
	// Kind is what the source is.
	Kind string `yaml:"kind" json:"kind"`
	// Archived is the address of an archived copy of the page (the Wayback
	// Machine's https://web.archive.org/web/..., say), https. Optional: leave
	// it out when no copy exists; chaoslab validate then notes the source
	// as unarchived.
	Archived string `yaml:"archived,omitempty" json:"archived,omitempty"`
}

// File returns the name of the file the record was parsed from ("" if it was built in code):
// a built-in record's file name in seeds/, a user's record's path as given.
func (r Record) File() string { return r.file }

// Builtin says whether the record is one of those embedded in the binary (seeds/).
func (r Record) Builtin() bool { return r.builtin }

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
		r.builtin = true
		recs = append(recs, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, nil
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
// folder). Errors name the path as given. Get finds the record by that
// path afterwards.
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
	remember(path, r)
	return r, nil
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

// ClockPattern is the form of TimelineEntry.At and Action.Until: a 24-hour
// clock time and its zone.
const ClockPattern = `^([01][0-9]|2[0-3]):[0-5][0-9] (UTC|PST|PDT)$`

// NamePattern is the form of Number.Name: snake_case.
const NamePattern = `^[a-z][a-z0-9]*(_[a-z0-9]+)*$`

// clockRule is what Validate says of a malformed clock time.
const clockRule = `not a 24-hour clock time with its zone ("09:35 UTC", "05:15 PST" or "10:07 PDT")`

var (
	nameRe  = regexp.MustCompile(NamePattern)
	clockRe = regexp.MustCompile(ClockPattern)

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
			v.fail(p+".at", clockRule+": %q", t.At)
		}
		if t.Date != "" {
			if _, err := time.Parse(DateLayout, t.Date); err != nil {
				v.fail(p+".date", "not a YYYY-MM-DD date: %q", t.Date)
			}
		}
		v.required(p+".event", t.Event)
		if t.Reveals != "" && !contains(RevealKinds, t.Reveals) {
			v.fail(p+".reveals", "%q is not one of %s (what the entry gives away to a trainee)", t.Reveals, strings.Join(RevealKinds, ", "))
		}
		for j, a := range t.Actions {
			q := fmt.Sprintf("%s.actions[%d]", p, j)
			if v.required(q+".kind", a.Kind) && !contains(ActionKinds, a.Kind) {
				v.fail(q+".kind", "%q is not one of %s", a.Kind, strings.Join(ActionKinds, ", "))
			}
			if a.Until != "" && !clockRe.MatchString(a.Until) {
				v.fail(q+".until", clockRule+": %q", a.Until)
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
		if v.r.lines != nil && v.r.lines[p] > 0 && v.r.lines[p+".value"] == 0 {
			v.fail(p+".value", "required: the figure as one number (a range or \"about N\": one value with approx: true)")
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
		if a := strings.TrimSpace(s.Archived); a != "" && !strings.HasPrefix(a, "https://") {
			v.fail(p+".archived", "must start with https://: %q (the address of an archived copy of url, such as https://web.archive.org/web/2024/%s; leave archived out when no copy exists)", s.Archived, s.URL)
		}
	}

	v.required("summary", r.Summary)
	return v.errs.orNil()
}

// Notes are what Validate lets pass but a reader should know, each
// naming the file, the field path and the line: the sources without an
// archived copy.
func (r Record) Notes() []string {
	var out []string
	for i, s := range r.Sources {
		if strings.TrimSpace(s.Archived) != "" {
			continue
		}
		e := FieldError{File: r.fileName(), Field: fmt.Sprintf("sources[%d]", i), Line: r.lineOf(fmt.Sprintf("sources[%d]", i)),
			Msg: fmt.Sprintf("%s has no archived copy: allowed, but add archived: with the address of a copy when one exists, "+
				"so that the record still cites the page if it changes or goes away", s.URL)}
		out = append(out, e.Error())
	}
	return out
}

type validator struct {
	r    Record
	errs Errors
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
	v.errs = append(v.errs, &FieldError{File: v.r.fileName(), Line: v.r.lineOf(path), Field: path, Msg: fmt.Sprintf(format, args...)})
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
