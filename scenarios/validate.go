package scenarios

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/seeds"
)

// validate checks the values of a decoded scenario, asking the plug-in
// registries what exists.
func (c *checker) validate(s *Scenario, root *yaml.Node) {
	need := func(ok bool, field, msg string, args ...any) {
		if !ok {
			c.add(lookup(root, field), field, msg, args...)
		}
	}
	need(s.ID != "", "id", "required")
	if s.ID != "" {
		c.msg(lookup(root, "id"), "id", lab.CheckName(s.ID, MaxIDLen))
	}
	need(s.Title != "", "title", "required")
	need(!strings.Contains(strings.TrimSpace(s.Title), "\n"), "title", "want one line: it heads listings and the report")
	need(s.Description != "", "description", "required")
	c.checkCase(s, root)
	if s.System == "" {
		c.add(lookup(root, "system"), "system", "required: the system under test (known: %s)", strings.Join(lab.SystemNames(), ", "))
		return
	}
	sys, err := lab.GetSystem(s.System)
	if err != nil {
		c.add(lookup(root, "system"), "system", "%v", err)
		return
	}
	for name := range s.Topology {
		need(name == s.System, "topology."+name, "only the system under test (%s) has a topology here", s.System)
	}
	k := c.kind(s, sys, root)
	c.variants(s, sys, k, root, need)
	if k == nil {
		return
	}
	before := len(c.errs)
	c.timeline(s, sys, k, root, need)
	if len(c.errs) == before {
		c.variantTimelines(s, root)
	}
	c.judgement(s, sys, k, root, need)
}

// kind finds the workload's kind and checks that it runs on the system.
func (c *checker) kind(s *Scenario, sys lab.System, root *yaml.Node) lab.Kind {
	name, at := scalar(&s.Workload, "kind")
	if s.Workload.Kind != yaml.MappingNode {
		c.add(lookup(root, "workload"), "workload", "want a mapping with a kind (known: %s)", strings.Join(lab.KindNames(), ", "))
		return nil
	}
	if at == nil {
		c.add(&s.Workload, "workload.kind", "required: the workload's kind (known: %s)", strings.Join(lab.KindNames(), ", "))
		return nil
	}
	k, err := lab.GetKind(name)
	if err != nil {
		if at == nil {
			at = &s.Workload
		}
		c.add(at, "workload.kind", "%v", err)
		return nil
	}
	if !slices.Contains(k.Systems(), sys.Name()) {
		c.add(at, "workload.kind", "%s runs against %s, not %s", name, strings.Join(k.Systems(), " or "), sys.Name())
		return nil
	}
	s.kind = name
	return k
}

// variants checks every variant's effective topology and workload.
func (c *checker) variants(s *Scenario, sys lab.System, k lab.Kind, root *yaml.Node, need func(bool, string, string, ...any)) {
	need(len(s.Variants) > 0, "variants", "want at least one variant")
	base := s.Topology[s.System]
	baseWork := withoutKey(&s.Workload, "kind")
	before := len(c.errs)
	topo := c.settings(&base, sys.NewTopology(), "topology."+s.System)
	if k != nil {
		st := c.settings(baseWork, k.NewSettings(), "workload")
		c.warmup(baseWork, st, s, "workload")
		c.ineffective(baseWork, st, "workload")
		c.fits(baseWork, st, topo, "workload")
	}
	if len(c.errs) > before {
		return // each variant would repeat the same errors
	}
	for _, name := range s.VariantNames() {
		v := s.Variants[name]
		p := "variants." + name
		c.msg(keyOf(root, "variants", name), p, lab.CheckName(name, MaxVariantLen))
		need(v.Description != "", p+".description", "required")
		for sname := range v.Topology {
			need(sname == s.System, p+".topology."+sname, "only the system under test (%s) has a topology here", s.System)
		}
		over := v.Topology[s.System]
		vtopo := c.settings(merge(&base, &over), sys.NewTopology(), p+".topology."+s.System)
		if k == nil {
			continue
		}
		if kn, at := scalar(&v.Workload, "kind"); at != nil {
			c.add(at, p+".workload.kind", "a variant cannot change the workload's kind (%s)", kn)
			continue
		}
		merged := merge(baseWork, &v.Workload)
		st := c.settings(merged, k.NewSettings(), p+".workload")
		c.warmup(&v.Workload, st, s, p+".workload")
		c.ineffective(&v.Workload, st, p+".workload")
		if len(v.Workload.Content) > 0 || len(over.Content) > 0 {
			c.fits(merged, st, vtopo, p+".workload")
		}
	}
}

// fits checks workload settings against the servers they run against,
// at the key's line in n.
func (c *checker) fits(n *yaml.Node, st, topo lab.Settings, path string) {
	w, ok := st.(lab.TopologyChecker)
	if !ok || st == nil || topo == nil {
		return
	}
	for _, p := range w.CheckTopology(topo) {
		at := lookupKey(n, p.Field)
		if at == nil {
			at = n
		}
		c.add(at, join(path, p.Field), "%s", p.Msg)
	}
}

// Bounds of the names that become folders, cgroups and containers: a
// variant's is joined to the scenario's id and a time, which the engine
// holds to 63 characters (the id is shortened to fit, the variant is not).
const (
	MaxIDLen      = 64
	MaxVariantLen = 32
)

// warmup checks settings that must fit the warm-up, at the keys over
// sets (a variant reports only what it sets itself).
func (c *checker) warmup(over *yaml.Node, st lab.Settings, s *Scenario, path string) {
	w, ok := st.(lab.WarmupChecker)
	if !ok || st == nil {
		return
	}
	for _, p := range w.CheckWarmup(s.Timeline.Warmup.D()) {
		if at := lookupKey(over, p.Field); at != nil {
			c.add(at, join(path, p.Field), "%s", p.Msg)
		}
	}
}

// ineffective refuses keys over sets that do nothing in the mode st is
// in (a variant reports only what it sets itself).
func (c *checker) ineffective(over *yaml.Node, st lab.Settings, path string) {
	w, ok := st.(lab.IneffectiveChecker)
	if !ok || st == nil {
		return
	}
	for _, p := range w.CheckIneffective() {
		if at := lookupKey(over, p.Field); at != nil {
			c.add(at, join(path, p.Field), "%s", p.Msg)
		}
	}
}

// msg records a problem when m is not "".
func (c *checker) msg(n *yaml.Node, field, m string) {
	if m != "" {
		c.add(n, field, "%s", m)
	}
}

// keyOf is the key node of a mapping's key at a path of keys (nil when absent).
func keyOf(root *yaml.Node, keys ...string) *yaml.Node {
	n := root
	var k *yaml.Node
	for _, key := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		i := keyIndex(n, key)
		if i < 0 {
			return nil
		}
		k, n = n.Content[i], n.Content[i+1]
	}
	return k
}

// lookupKey is the node of a dotted path below n when every key is there
// (nil otherwise).
func lookupKey(n *yaml.Node, path string) *yaml.Node {
	for _, key := range strings.Split(path, ".") {
		n = valueOf(n, key)
		if n == nil {
			return nil
		}
	}
	return n
}

// timeline checks the fault steps: names, parameters, targets.
func (c *checker) timeline(s *Scenario, sys lab.System, k lab.Kind, root *yaml.Node, need func(bool, string, string, ...any)) {
	tl := s.Timeline
	need(tl.Warmup.D() >= time.Second, "timeline.warmup", "%s is less than 1s: the workload must run before the first fault", tl.Warmup)
	sample := max(time.Second, sys.SampleEvery())
	need(tl.Observe.D() >= sample, "timeline.observe", "%s is less than %s, how often the servers are sampled: nothing would be measured after the last fault", tl.Observe, sample)
	need(len(tl.Faults) > 0, "timeline.faults", "want at least one fault")
	if s.RunLength() > lab.MaxDuration {
		c.add(keyOf(root, "timeline"), "timeline", "a variant would run %s (warm-up, faults, observation), more than %s: a replay of an outage, not a soak test", s.RunLength(), lab.MaxDuration)
	}
	for i, f := range tl.Faults {
		p := fmt.Sprintf("timeline.faults[%d]", i)
		need(f.Duration.D() > 0, p+".duration", "want more than 0s, got %s", f.Duration)
		need(f.At.D() >= 0, p+".at", "%s is negative: at counts from the end of the warm-up", f.At)
		if i > 0 {
			c.order(tl.Faults[i-1], f, i, root)
		}
		if _, err := lab.ParseSelector(f.Target, sys.Roles(), k.Groups()); err != nil {
			c.add(lookup(root, p+".target"), p+".target", "%v", err)
		}
		flt, err := faults.New(f.Fault)
		if err != nil {
			c.add(lookup(root, p+".fault"), p+".fault", "unknown fault %q (known: %s)", f.Fault, strings.Join(faults.Names(), ", "))
			continue
		}
		c.settings(&f.Params, flt, p+".params")
	}
}

// variantTimelines checks each variant's overrides of the fault steps:
// the step exists, is changed once, and its parameters with the
// variant's merged in are the fault's.
func (c *checker) variantTimelines(s *Scenario, root *yaml.Node) {
	for _, name := range s.VariantNames() {
		tl := s.Variants[name].Timeline
		if tl == nil {
			continue
		}
		p := "variants." + name + ".timeline.faults"
		if len(tl.Faults) == 0 {
			c.add(lookup(root, p), p, "want at least one step to change (or no timeline)")
		}
		seen := map[int]bool{}
		for i, o := range tl.Faults {
			sp := fmt.Sprintf("%s[%d]", p, i)
			n := len(s.Timeline.Faults)
			if o.Step < 1 || o.Step > n {
				c.add(lookup(root, sp+".step"), sp+".step", "no fault step %d: timeline.faults has %d (1 is the first)", o.Step, n)
				continue
			}
			if seen[o.Step] {
				c.add(lookup(root, sp+".step"), sp+".step", "step %d is changed twice: merge the two", o.Step)
			}
			seen[o.Step] = true
			if o.Params.Kind == 0 && o.Duration == nil {
				c.add(lookup(root, sp), sp, "changes nothing: give params, a duration or both")
			}
			if o.Duration != nil && o.Duration.D() <= 0 {
				c.add(lookup(root, sp+".duration"), sp+".duration", "want more than 0s: how long the step is planned to last in this variant")
			}
			base := s.Timeline.Faults[o.Step-1]
			flt, err := faults.New(base.Fault)
			if err != nil {
				continue // timeline says so
			}
			c.settings(merge(&base.Params, &o.Params), flt, sp+".params")
		}
	}
}

// order checks that fault i starts after fault i-1 has ended: the
// harness injects one fault at a time, in list order.
func (c *checker) order(prev, f FaultStep, i int, root *yaml.Node) {
	p := fmt.Sprintf("timeline.faults[%d].at", i)
	end := prev.At.D() + prev.Duration.D()
	switch {
	case f.At.D() < prev.At.D():
		c.add(lookup(root, p), p, "%s is before faults[%d] (at %s): list the faults in the order they start", f.At, i-1, prev.At)
	case f.At.D() < end:
		c.add(lookup(root, p), p, "%s overlaps faults[%d], which lasts until %s: the harness injects one fault at a time, so this one would start late", f.At, i-1, Duration(end))
	}
}

// checkCase checks that the case record exists: a built-in one (or one
// the caller knows) by id, or a file of the user's by path, relative to
// the scenario's file.
func (c *checker) checkCase(s *Scenario, root *yaml.Node) {
	at := lookup(root, "case")
	if s.Case == "" {
		c.add(at, "case", "required: the id of a case record in seeds/, or a path to your own record file")
		return
	}
	if !IsCasePath(s.Case) {
		if CaseChecker != nil {
			if err := CaseChecker(s.Case); err != nil {
				c.add(at, "case", "%v", err)
			}
		}
		return
	}
	path := s.Case
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(c.file), path)
	}
	if _, err := seeds.LoadFile(path); err != nil {
		c.add(at, "case", "case record %s: %s", path, strings.TrimPrefix(err.Error(), "seeds: "))
		return
	}
	s.caseFile = path
}

// IsCasePath says whether a scenario's case names a file (a path, or a
// name ending in .yaml or .yml) rather than a case id.
func IsCasePath(ref string) bool { return seeds.IsPath(ref) }

// judgement checks hypotheses, comparisons, expectations and evidence.
func (c *checker) judgement(s *Scenario, sys lab.System, k lab.Kind, root *yaml.Node, need func(bool, string, string, ...any)) {
	known, series := Metrics(sys, k), Series(sys, k)
	metric := func(p, name string) {
		err := checkMetric(name, known, series)
		if err == nil {
			err = checkServerView(name, sys, known, series)
		}
		if err == nil {
			err = checkBaseline(name, s.Timeline)
		}
		if err != nil {
			c.add(lookup(root, p+".metric"), p+".metric", "%v", err)
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
		metric(p, h.Metric)
		need(slices.Contains(opNames, h.Op), p+".op", "want one of %s, got %q", strings.Join(opNames, " "), h.Op)
	}
	for i, cmp := range s.Comparisons {
		p := fmt.Sprintf("comparisons[%d]", i)
		need(cmp.ID != "", p+".id", "required")
		need(cmp.Description != "", p+".description", "required")
		metric(p, cmp.Metric)
		_, okN := s.Variants[cmp.Numerator]
		_, okD := s.Variants[cmp.Denominator]
		need(okN, p+".numerator", "no variant %q", cmp.Numerator)
		need(okD, p+".denominator", "no variant %q", cmp.Denominator)
		need(cmp.Numerator != cmp.Denominator, p+".denominator", "%q is the numerator too: a comparison relates two variants", cmp.Denominator)
		need(slices.Contains(opNames, cmp.Op), p+".op", "want one of %s, got %q", strings.Join(opNames, " "), cmp.Op)
	}
	need(len(s.Expect) > 0, "expect", "want an expected verdict per variant")
	for _, name := range s.VariantNames() {
		_, ok := s.Expect[name]
		need(ok || len(s.Expect) == 0, "expect", "no verdict for variant %q: a variant without one can never meet its expectation (add %s: held or violated)", name, name)
	}
	for name, v := range s.Expect {
		_, ok := s.Variants[name]
		need(ok, "expect."+name, "no variant %q", name)
		need(slices.Contains(verdictNames, v), "expect."+name, "want held or violated, got %q", v)
	}
	for i, e := range s.Evidence {
		p := fmt.Sprintf("evidence[%d]", i)
		need(e.Incident != "", p+".incident", "required")
		metric(p, e.Metric)
		for _, f := range []struct{ field, name string }{{"variant", e.Variant}, {"above", e.Above}} {
			_, ok := s.Variants[f.name]
			need(f.name == "" || ok, p+"."+f.field, "no variant %q (variants: %s)", f.name, strings.Join(slices.Sorted(maps.Keys(s.Variants)), ", "))
		}
		need(e.Above == "" || (e.Variant != "" && e.Above != e.Variant), p+".above", "names the variant %q's figure must exceed: set variant to another one", e.Above)
		if msg := caseNumber(s, e.Number); msg != "" {
			c.add(lookup(root, p+".number"), p+".number", "%s", msg)
		}
	}
}

// caseNumber says what is wrong with an evidence row's number: it must
// name one of the case record's numbers ("" when it does, when none is
// given, or when the record cannot be read, which checkCase reports).
func caseNumber(s *Scenario, name string) string {
	if name == "" {
		return ""
	}
	ref := s.Case
	if s.caseFile != "" {
		ref = s.caseFile
	}
	rec, err := seeds.Get(ref)
	if err != nil {
		return ""
	}
	var names []string
	for _, n := range rec.Numbers {
		if n.Name == name {
			return ""
		}
		names = append(names, n.Name)
	}
	return fmt.Sprintf("no number %q in case record %s (its numbers: %s)", name, rec.ID, strings.Join(names, ", "))
}
