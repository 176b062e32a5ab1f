package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
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
	need(s.Title != "", "title", "required")
	need(s.Description != "", "description", "required")
	need(s.Case != "", "case", "required: the id of a case record in seeds/")
	if s.Case != "" && CaseChecker != nil {
		if err := CaseChecker(s.Case); err != nil {
			c.add(lookup(root, "case"), "case", "%v", err)
		}
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
	c.timeline(s, sys, k, root, need)
	c.judgement(s, sys, k, root, need)
}

// kind finds the workload's kind and checks that it runs on the system.
func (c *checker) kind(s *Scenario, sys lab.System, root *yaml.Node) lab.Kind {
	name, at := scalar(&s.Workload, "kind")
	if s.Workload.Kind != yaml.MappingNode {
		c.add(lookup(root, "workload"), "workload", "want a mapping with a kind")
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
	c.settings(&base, sys.NewTopology(), "topology."+s.System)
	if k != nil {
		c.settings(baseWork, k.NewSettings(), "workload")
	}
	if len(c.errs) > before {
		return // each variant would repeat the same errors
	}
	for _, name := range s.VariantNames() {
		v := s.Variants[name]
		p := "variants." + name
		need(v.Description != "", p+".description", "required")
		for sname := range v.Topology {
			need(sname == s.System, p+".topology."+sname, "only the system under test (%s) has a topology here", s.System)
		}
		over := v.Topology[s.System]
		c.settings(merge(&base, &over), sys.NewTopology(), p+".topology."+s.System)
		if k == nil {
			continue
		}
		if kn, at := scalar(&v.Workload, "kind"); at != nil {
			c.add(at, p+".workload.kind", "a variant cannot change the workload's kind (%s)", kn)
			continue
		}
		c.settings(merge(baseWork, &v.Workload), k.NewSettings(), p+".workload")
	}
}

// timeline checks the fault steps: names, parameters, targets.
func (c *checker) timeline(s *Scenario, sys lab.System, k lab.Kind, root *yaml.Node, need func(bool, string, string, ...any)) {
	need(s.Timeline.Warmup.D() >= 0, "timeline.warmup", "want >= 0")
	need(len(s.Timeline.Faults) > 0, "timeline.faults", "want at least one fault")
	for i, f := range s.Timeline.Faults {
		p := fmt.Sprintf("timeline.faults[%d]", i)
		need(f.Duration.D() > 0, p+".duration", "want > 0")
		need(f.At.D() >= 0, p+".at", "want >= 0")
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

// judgement checks hypotheses, comparisons, expectations and evidence.
func (c *checker) judgement(s *Scenario, sys lab.System, k lab.Kind, root *yaml.Node, need func(bool, string, string, ...any)) {
	known := Metrics(sys, k)
	metric := func(p, name string) {
		if err := checkMetric(name, known, Series(sys, k)); err != nil {
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
		metric(p, cmp.Metric)
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
		metric(p, e.Metric)
	}
}
