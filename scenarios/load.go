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
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
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
		line := yamlErrLine(err)
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", line)) // the location says it
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
	c := &checker{file: file}
	c.walk(root, reflect.TypeOf(Scenario{}), "")
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	var s Scenario
	if err := root.Decode(&s); err != nil {
		return nil, Errors{{File: file, Line: yamlErrLine(err), Msg: err.Error()}}
	}
	s.Source = file
	// Variant workloads are partial workloads: check their fields too.
	for name, v := range s.Variants {
		if v.Workload.Kind != 0 {
			c.walk(&v.Workload, reflect.TypeOf(Workload{}), "variants."+name+".workload")
		}
	}
	if len(c.errs) == 0 {
		c.validate(&s, root)
	}
	if len(c.errs) > 0 {
		// Map iteration (variants, expect) has no order: report in file order.
		sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Line < c.errs[j].Line })
		return nil, c.errs
	}
	return &s, nil
}

// EffectiveWorkload is the scenario's workload with the variant's overrides.
func (s *Scenario) EffectiveWorkload(variant string) (Workload, error) {
	w := s.Workload
	w.Tree.Fanout = slices.Clone(w.Tree.Fanout)
	v, ok := s.Variants[variant]
	if !ok {
		return w, fmt.Errorf("scenario %s: no variant %q", s.ID, variant)
	}
	if v.Workload.Kind != 0 {
		if err := v.Workload.Decode(&w); err != nil {
			return w, fmt.Errorf("scenario %s: variant %s: %w", s.ID, variant, err)
		}
	}
	return w, nil
}

// VariantNames returns the variant names, vulnerable first, mitigated next.
func (s *Scenario) VariantNames() []string {
	var names []string
	for n := range s.Variants {
		names = append(names, n)
	}
	rank := func(n string) int {
		switch n {
		case "vulnerable":
			return 0
		case "mitigated":
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	return names
}

// Duration of a variant run: warm-up, the faults and the observation window.
func (s *Scenario) RunLength() time.Duration {
	var end time.Duration
	for _, f := range s.Timeline.Faults {
		end = max(end, f.At.D()+f.Duration.D())
	}
	return s.Timeline.Warmup.D() + end + s.Timeline.Observe.D()
}

type checker struct {
	file string
	errs Errors
}

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
		if _, err := time.ParseDuration(n.Value); err != nil {
			c.add(n, path, "not a duration (like 10s or 1m30s): %q", n.Value)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			c.add(n, path, "want a mapping")
			return
		}
		fields := map[string]reflect.StructField{}
		var known []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
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
	faultNames   = []string{"pause", "kill-restart", "cpu-throttle", "replace", "disconnect", "add-capacity", "restart-fleet"}
	fleetFaults  = []string{"add-capacity", "restart-fleet"}
	verdictNames = []string{"held", "violated"}
	opNames      = []string{"<", "<=", ">", ">=", "=="}
)

// RegisterFault lets harness packages add names the loader accepts.
func RegisterFault(name string) {
	if !slices.Contains(faultNames, name) {
		faultNames = append(faultNames, name)
	}
}

func (c *checker) validate(s *Scenario, root *yaml.Node) {
	need := func(ok bool, field, msg string, args ...any) {
		if !ok {
			c.add(lookup(root, field), field, msg, args...)
		}
	}
	need(s.ID != "", "id", "required")
	need(s.Title != "", "title", "required")
	need(s.Description != "", "description", "required")
	need(s.Case != "", "case", "required: the id of a case record in seeds/")
	if s.Case != "" && CaseChecker != nil {
		if err := CaseChecker(s.Case); err != nil {
			c.add(lookup(root, "case"), "case", "%v", err)
		}
	}
	need(slices.Contains([]string{"zookeeper", "etcd", "consul"}, s.System), "system", "want zookeeper, etcd or consul, got %q", s.System)
	if s.System == "zookeeper" {
		z := s.Topology.ZooKeeper
		need(z != nil, "topology.zookeeper", "required for system zookeeper")
		if z != nil {
			need(z.Servers >= 1 && z.Servers <= 7, "topology.zookeeper.servers", "want 1 to 7, got %d", z.Servers)
		}
	}
	if s.System == "etcd" {
		e := s.Topology.Etcd
		need(e != nil, "topology.etcd", "required for system etcd")
		if e != nil {
			need(e.Members >= 1 && e.Members <= 7, "topology.etcd.members", "want 1 to 7, got %d", e.Members)
		}
	}
	wantKind := map[string]string{"zookeeper": "zk-tree-mirror", "etcd": "kinesis-frontend"}[s.System]
	need(wantKind == "" || s.Workload.Kind == wantKind, "workload.kind", "a %s scenario runs %s, got %q", s.System, wantKind, s.Workload.Kind)
	baseErrs := len(c.errs)
	c.checkWorkload(s.Workload, "workload", root, need)
	baseOK := len(c.errs) == baseErrs

	need(s.Timeline.Warmup.D() >= 0, "timeline.warmup", "want >= 0")
	need(len(s.Timeline.Faults) > 0, "timeline.faults", "want at least one fault")
	for i, f := range s.Timeline.Faults {
		p := fmt.Sprintf("timeline.faults[%d]", i)
		need(slices.Contains(faultNames, f.Fault), p+".fault", "unknown fault %q (known: %s)", f.Fault, strings.Join(faultNames, ", "))
		if slices.Contains(fleetFaults, f.Fault) {
			need(f.Target == "fleet", p+".target", "%s acts on the fleet: want target fleet, got %q", f.Fault, f.Target)
			need(s.Workload.Kind == "kinesis-frontend", p+".fault", "%s needs a kinesis-frontend workload", f.Fault)
		} else {
			need(slices.Contains([]string{"leader", "follower", "any"}, f.Target), p+".target", "want leader, follower or any, got %q", f.Target)
		}
		need(f.Duration.D() > 0, p+".duration", "want > 0")
		need(f.At.D() >= 0, p+".at", "want >= 0")
	}

	need(len(s.Variants) > 0, "variants", "want at least one variant")
	for name, v := range s.Variants {
		p := "variants." + name
		need(v.Description != "", p+".description", "required")
		ew, err := s.EffectiveWorkload(name)
		if err != nil {
			c.add(lookup(root, p+".workload"), p+".workload", "%v", err)
			continue
		}
		if baseOK && v.Workload.Kind != 0 {
			// The override must leave a valid workload too.
			c.checkWorkload(ew, p+".workload", root, need)
		}
		if ew.Kind != "zk-tree-mirror" {
			continue
		}
		need(slices.Contains([]string{"full-refresh", "paced"}, ew.Strategy), p+".workload.strategy", "want full-refresh or paced (here or in workload), got %q", ew.Strategy)
		if ew.Strategy == "paced" {
			need(ew.Window >= 1, p+".workload.window", "paced needs a window >= 1")
		}
	}
	need(len(s.Hypotheses) > 0, "hypotheses", "want at least one hypothesis")
	ids := map[string]bool{}
	for i, h := range s.Hypotheses {
		p := fmt.Sprintf("hypotheses[%d]", i)
		need(h.ID != "", p+".id", "required")
		need(!ids[h.ID], p+".id", "repeated id %q", h.ID)
		ids[h.ID] = true
		need(h.Description != "", p+".description", "required")
		need(IsMetric(h.Metric), p+".metric", "unknown metric %q (known: %s)", h.Metric, strings.Join(MetricNames(), ", "))
		need(slices.Contains(opNames, h.Op), p+".op", "want one of %s, got %q", strings.Join(opNames, " "), h.Op)
	}
	for i, cmp := range s.Comparisons {
		p := fmt.Sprintf("comparisons[%d]", i)
		need(cmp.ID != "", p+".id", "required")
		need(IsMetric(cmp.Metric), p+".metric", "unknown metric %q", cmp.Metric)
		_, okN := s.Variants[cmp.Numerator]
		_, okD := s.Variants[cmp.Denominator]
		need(okN, p+".numerator", "no variant %q", cmp.Numerator)
		need(okD, p+".denominator", "no variant %q", cmp.Denominator)
		need(slices.Contains(opNames, cmp.Op), p+".op", "want one of %s, got %q", strings.Join(opNames, " "), cmp.Op)
	}
	need(len(s.Expect) > 0, "expect", "want an expected verdict per variant")
	for name, v := range s.Expect {
		_, ok := s.Variants[name]
		need(ok, "expect."+name, "no variant %q", name)
		need(slices.Contains(verdictNames, v), "expect."+name, "want held or violated, got %q", v)
	}
	for i, e := range s.Evidence {
		p := fmt.Sprintf("evidence[%d]", i)
		need(e.Incident != "", p+".incident", "required")
		need(IsMetric(e.Metric), p+".metric", "unknown metric %q", e.Metric)
	}
}

// checkWorkload checks a workload's values; prefix is its path in the file.
func (c *checker) checkWorkload(w Workload, prefix string, root *yaml.Node, need func(bool, string, string, ...any)) {
	f := func(field string) string { return prefix + "." + field }
	need(w.Kind == "zk-tree-mirror" || w.Kind == "kinesis-frontend", f("kind"), "want zk-tree-mirror or kinesis-frontend, got %q", w.Kind)
	need(w.Clients >= 1, f("clients"), "want at least 1")
	if w.Kind == "kinesis-frontend" {
		c.checkFleet(w.Fleet, prefix+".fleet", need)
		return
	}
	need(strings.HasPrefix(w.Tree.Path, "/") && len(w.Tree.Path) > 1, f("tree.path"), "want an absolute znode path below /")
	need(len(w.Tree.Fanout) > 0, f("tree.fanout"), "want at least one level")
	for i, n := range w.Tree.Fanout {
		need(n >= 1, fmt.Sprintf("%s[%d]", f("tree.fanout"), i), "want at least 1")
	}
	need(w.Tree.Nodes() <= 200000, f("tree.fanout"), "%d znodes is more than the harness seeds (200000)", w.Tree.Nodes())
	need(w.SessionTimeout.D() >= time.Second, f("session_timeout"), "want at least 1s")
	need(w.Writer.Share >= 0 && w.Writer.Share <= 1, f("writer.share"), "want 0 to 1")
	need(w.Writer.RatePerSec >= 0, f("writer.rate_per_sec"), "want >= 0")
	need(w.MemoryLimitMB >= 0, f("memory_limit_mb"), "want >= 0")
}

func (c *checker) checkFleet(fl Fleet, prefix string, need func(bool, string, string, ...any)) {
	f := func(field string) string { return prefix + "." + field }
	need(fl.Servers >= 2, f("servers"), "want at least 2 servers (a fleet has peers)")
	need(fl.Servers <= 200, f("servers"), "%d servers is more than one machine runs here (200)", fl.Servers)
	need(fl.AddFraction > 0 && fl.AddFraction <= 1, f("add_fraction"), "want more than 0 and at most 1")
	need(fl.ThreadLimit >= 8, f("thread_limit"), "want at least 8 (the Go runtime needs a few threads of its own)")
	need(fl.CPUQuota >= 0, f("cpu_quota"), "want >= 0")
	need(fl.PeerThreads == "per-peer" || fl.PeerThreads == "pool", f("peer_threads"), "want per-peer or pool, got %q", fl.PeerThreads)
	if fl.PeerThreads == "pool" {
		need(fl.PoolThreads >= 1, f("pool_threads"), "pool needs pool_threads >= 1")
	}
	need(fl.CellSize >= 0, f("cell_size"), "want >= 0")
	need(fl.Bootstrap == "peers" || fl.Bootstrap == "store", f("bootstrap"), "want peers or store, got %q", fl.Bootstrap)
	need(fl.Shards >= 1 && fl.Shards <= 200000, f("shards"), "want 1 to 200000")
	need(fl.RequestRate > 0, f("request_rate"), "want > 0")
	need(fl.RestartRate >= 0, f("restart_rate"), "want >= 0 (0 restarts every server at once)")
	need(fl.HealthFailures >= 0, f("health_failures"), "want >= 0")
	need(fl.LearnSpread.D() >= 0, f("learn_spread"), "want >= 0")
}

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
