package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Size is another size of the same replay (ci: the reduced size every CI
// run replays): settings laid over the scenario's before the variants'
// own, mappings merged key by key, anything else replaced. What is judged
// (hypotheses, comparisons, expectations, evidence) is the scenario's: a
// size must still decide, and its description says why it does. Only a
// bound that scales with what the size changes (a recovery bound with the
// pace of a restart) may be restated, with its reason (Bounds).
type Size struct {
	// Description says what the size changes and why it still decides.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Topology settings laid over the scenario's (topology.<system>).
	Topology map[string]yaml.Node `yaml:"topology,omitempty" json:"-"`
	// Workload settings laid over the scenario's.
	Workload yaml.Node `yaml:"workload,omitempty" json:"-"`
	// Timeline changes the warm-up, the observation and fault steps.
	Timeline *SizeTimeline `yaml:"timeline,omitempty" json:"timeline,omitempty"`
	// Variants are settings laid over a variant's own, by variant name.
	Variants map[string]SizeVariant `yaml:"variants,omitempty" json:"variants,omitempty"`
	// Bounds restate hypotheses' thresholds at this size.
	Bounds []SizeBound `yaml:"bounds,omitempty" json:"bounds,omitempty"`
	// Run are the variants replayed at this size when none are named
	// (default: every variant); the others are the full size's.
	Run []string `yaml:"run,omitempty" json:"run,omitempty"`
}

// SizeBound restates one hypothesis's threshold at a size.
type SizeBound struct {
	// Hypothesis is the id of the hypothesis whose threshold changes.
	Hypothesis string `yaml:"hypothesis" json:"hypothesis" jsonschema:"required"`
	// Threshold is the bound at this size, in the metric's unit.
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// Why says how the bound follows from what the size changes.
	Why string `yaml:"why" json:"why" jsonschema:"required"`
}

// SizeTimeline is what a size changes in the fault timeline.
type SizeTimeline struct {
	// Warmup replaces the scenario's warm-up.
	Warmup *Duration `yaml:"warmup,omitempty" json:"warmup,omitempty"`
	// Observe replaces the scenario's observation.
	Observe *Duration `yaml:"observe,omitempty" json:"observe,omitempty"`
	// Faults change steps of timeline.faults: when, how long, parameters.
	Faults []SizeStep `yaml:"faults,omitempty" json:"faults,omitempty"`
}

// SizeStep changes one fault step at a size.
type SizeStep struct {
	// Step is the fault step it changes: 1 for the first of timeline.faults.
	Step int `yaml:"step" json:"step" jsonschema:"required,minimum=1"`
	// At replaces the step's offset from the end of the warm-up.
	At *Duration `yaml:"at,omitempty" json:"at,omitempty"`
	// Duration replaces how long the step lasts.
	Duration *Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Params are merged into the step's parameters.
	Params yaml.Node `yaml:"params,omitempty" json:"-"`
}

// SizeVariant is what a size changes in one variant.
type SizeVariant struct {
	// Topology settings laid over the variant's.
	Topology map[string]yaml.Node `yaml:"topology,omitempty" json:"-"`
	// Workload settings laid over the variant's.
	Workload yaml.Node `yaml:"workload,omitempty" json:"-"`
}

// DefaultVariants are the variants a run replays when none are named:
// those of its size's run list, else every variant.
func (s *Scenario) DefaultVariants() []string {
	if run := s.Sizes[s.Size].Run; s.Size != "" && len(run) > 0 {
		return slices.Clone(run)
	}
	return s.VariantNames()
}

// SizeNames are the scenario's sizes, sorted.
func (s *Scenario) SizeNames() []string {
	var out []string
	for n := range s.Sizes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Sized is the scenario at one of its sizes ("" or the size it is at
// already: the scenario itself), checked like a file of its own; a
// problem names the line of the size's setting or of the scenario's.
func (s *Scenario) Sized(name string) (*Scenario, error) {
	if name == "" || name == s.Size {
		return s, nil
	}
	if s.Size != "" {
		return nil, fmt.Errorf("scenario %s: already at size %s", s.ID, s.Size)
	}
	over := valueOf(valueOf(s.root, "sizes"), name)
	if _, ok := s.Sizes[name]; !ok || over == nil {
		known := "none"
		if len(s.Sizes) > 0 {
			known = strings.Join(s.SizeNames(), ", ")
		}
		return nil, fmt.Errorf("scenario %s: no size %q (sizes: %s)", s.ID, name, known)
	}
	if errs := s.checkSize(name, over); errs != nil {
		return nil, errs
	}
	out, errs := parseRoot(s.Source, applySize(s.root, over))
	if errs != nil {
		for _, e := range errs {
			e.Msg += fmt.Sprintf(" (at size %s)", name)
		}
		return nil, errs
	}
	out.Size, out.Sizes, out.root = name, s.Sizes, s.root
	return out, nil
}

// checkSize checks what a size names: the system's topology, variants
// and fault steps that exist.
func (s *Scenario) checkSize(name string, over *yaml.Node) Errors {
	c := &checker{file: s.Source}
	p := "sizes." + name
	sz := s.Sizes[name]
	for sys := range sz.Topology {
		if sys != s.System {
			c.add(keyOf(over, "topology", sys), p+".topology."+sys, "only the system under test (%s) has a topology here", s.System)
		}
	}
	if kn, at := scalar(&sz.Workload, "kind"); at != nil {
		c.add(at, p+".workload.kind", "a size cannot change the workload's kind (%s)", kn)
	}
	for v, sv := range sz.Variants {
		if _, ok := s.Variants[v]; !ok {
			c.add(keyOf(over, "variants", v), p+".variants."+v, "no variant %q (variants: %s)", v, strings.Join(s.VariantNames(), ", "))
		}
		for sys := range sv.Topology {
			if sys != s.System {
				c.add(keyOf(over, "variants", v, "topology", sys), p+".variants."+v+".topology."+sys, "only the system under test (%s) has a topology here", s.System)
			}
		}
	}
	for i, v := range sz.Run {
		if _, ok := s.Variants[v]; !ok {
			c.add(lookup(over, fmt.Sprintf("run[%d]", i)), fmt.Sprintf("%s.run[%d]", p, i), "no variant %q (variants: %s)", v, strings.Join(s.VariantNames(), ", "))
		}
	}
	for i, b := range sz.Bounds {
		bp := fmt.Sprintf("%s.bounds[%d]", p, i)
		if !slices.ContainsFunc(s.Hypotheses, func(h Hypothesis) bool { return h.ID == b.Hypothesis }) {
			c.add(lookup(over, fmt.Sprintf("bounds[%d].hypothesis", i)), bp+".hypothesis", "no hypothesis %q", b.Hypothesis)
		}
		if strings.TrimSpace(b.Why) == "" {
			c.add(lookup(over, fmt.Sprintf("bounds[%d]", i)), bp+".why", "say how the bound follows from what the size changes")
		}
	}
	if sz.Timeline != nil {
		seen := map[int]bool{}
		for i, st := range sz.Timeline.Faults {
			sp := fmt.Sprintf("%s.timeline.faults[%d].step", p, i)
			at := lookup(over, fmt.Sprintf("timeline.faults[%d].step", i))
			switch n := len(s.Timeline.Faults); {
			case st.Step < 1 || st.Step > n:
				c.add(at, sp, "no fault step %d: timeline.faults has %d (1 is the first)", st.Step, n)
			case seen[st.Step]:
				c.add(at, sp, "step %d is changed twice: merge the two", st.Step)
			}
			seen[st.Step] = true
		}
	}
	return c.errs
}

// applySize is the document root with a size's settings laid over it,
// without the sizes themselves. Neither node is changed.
func applySize(root, over *yaml.Node) *yaml.Node {
	out := withoutKey(root, "sizes")
	for _, key := range []string{"topology", "workload", "variants"} {
		if v := valueOf(over, key); v != nil {
			out = setKey(out, key, merge(valueOf(out, key), v))
		}
	}
	if bs, hs := valueOf(over, "bounds"), valueOf(out, "hypotheses"); bs != nil && hs != nil {
		out = setKey(out, "hypotheses", overBounds(hs, bs))
	}
	tl := valueOf(over, "timeline")
	if tl == nil {
		return out
	}
	base := valueOf(out, "timeline")
	for _, key := range []string{"warmup", "observe"} {
		if v := valueOf(tl, key); v != nil {
			base = setKey(base, key, v)
		}
	}
	if steps, ovs := valueOf(base, "faults"), valueOf(tl, "faults"); steps != nil && ovs != nil {
		base = setKey(base, "faults", overSteps(steps, ovs))
	}
	return setKey(out, "timeline", base)
}

// overSteps is a fault list with a size's step changes merged in.
func overSteps(steps, ovs *yaml.Node) *yaml.Node {
	out := *steps
	out.Content = append([]*yaml.Node(nil), steps.Content...)
	for _, o := range ovs.Content {
		v, _ := scalar(o, "step")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > len(out.Content) {
			continue // checkSize says so
		}
		out.Content[n-1] = merge(out.Content[n-1], withoutKey(o, "step"))
	}
	return &out
}

// overBounds is the hypotheses with a size's thresholds.
func overBounds(hs, bs *yaml.Node) *yaml.Node {
	out := *hs
	out.Content = append([]*yaml.Node(nil), hs.Content...)
	for _, b := range bs.Content {
		id, _ := scalar(b, "hypothesis")
		th := valueOf(b, "threshold")
		for i, h := range out.Content {
			if hid, _ := scalar(h, "id"); hid == id && th != nil {
				out.Content[i] = setKey(h, "threshold", th)
			}
		}
	}
	return &out
}

// setKey is a mapping with one key's value set (added when absent).
func setKey(n *yaml.Node, key string, v *yaml.Node) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	}
	out := *n
	out.Content = append([]*yaml.Node(nil), n.Content...)
	if i := keyIndex(&out, key); i >= 0 {
		out.Content[i+1] = v
		return &out
	}
	out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return &out
}
