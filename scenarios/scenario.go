// Package scenarios holds chaoslab's scenario format: a scenario is data
// (topology x workload x fault timeline x variants x hypotheses) named after
// the incident it replays. The YAML definitions live next to this file and
// are embedded into the binary; Load reads any file from disk.
//
// What a topology, a workload or a fault's parameters may hold is not
// listed here: the loader asks the plug-in registries (harness/lab for
// systems and workload kinds, harness/faults for faults) and decodes each
// part strictly into the plug-in's own typed settings.
package scenarios

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/verdict"
)

// Scenario is one executable replay of a source incident.
type Scenario struct {
	// ID names the scenario after its source, e.g. il-0587-zk-treecache-reconnect-storm.
	ID string `yaml:"id" json:"id" jsonschema:"required,pattern=^[a-z0-9][a-z0-9-]*$"`
	// Title is one line for listings.
	Title string `yaml:"title" json:"title" jsonschema:"required"`
	// Case is the id of the case record in seeds/ (e.g. IL-0587).
	Case string `yaml:"case" json:"case" jsonschema:"required"`
	// System is the coordination service the scenario runs against (a
	// registered system: zookeeper, etcd, consul).
	System string `yaml:"system" json:"system" jsonschema:"required"`
	// Description says what is replayed and how, in a few sentences.
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Topology sizes the servers: topology.<system> holds the system's
	// topology settings; what is left out keeps its default.
	Topology map[string]yaml.Node `yaml:"topology,omitempty" json:"-"`
	// Workload is the workload common to every variant: its kind and the
	// kind's settings.
	Workload yaml.Node `yaml:"workload" json:"-" jsonschema:"required"`
	// Timeline is the incident's fault timeline.
	Timeline Timeline `yaml:"timeline" json:"timeline" jsonschema:"required"`
	// Variants maps a variant name (vulnerable, mitigated) to what it changes.
	Variants map[string]Variant `yaml:"variants" json:"variants" jsonschema:"required"`
	// Hypotheses are the properties that should hold; a variant that
	// violates any of them is "violated".
	Hypotheses []Hypothesis `yaml:"hypotheses" json:"hypotheses" jsonschema:"required,minItems=1"`
	// Comparisons relate the same measurement across two variants.
	Comparisons []Comparison `yaml:"comparisons,omitempty" json:"comparisons,omitempty"`
	// Expect gives the verdict each variant must reach for the scenario to
	// reproduce its incident (usually vulnerable: violated, mitigated: held).
	Expect map[string]string `yaml:"expect" json:"expect" jsonschema:"required"`
	// Evidence maps what the incident write-up says to what is measured.
	Evidence []Evidence `yaml:"evidence,omitempty" json:"evidence,omitempty"`
	// Sizes are other sizes of the same replay, by name (ci: the reduced
	// size CI replays): settings laid over the scenario's before the
	// variants' own. Hypotheses, comparisons and expectations stay the
	// scenario's, so a size must still decide (`chaoslab run --size ci`);
	// a bound that scales with what the size changes may be restated,
	// with its reason.
	Sizes map[string]Size `yaml:"sizes,omitempty" json:"sizes,omitempty"`

	// Size is the size this scenario was made at by Sized ("" for the
	// scenario as written, its full size; not part of the format).
	Size string `yaml:"-" json:"size,omitempty"`
	// Source is the file the scenario was loaded from (not part of the format).
	Source string `yaml:"-" json:"source,omitempty"`
	// kind is the workload's kind, once loaded.
	kind string
	// caseFile is the case record's file when Case is a path to one.
	caseFile string
	// root is the document as written, for Sized.
	root *yaml.Node
}

// CaseFile is the path of the case record when the scenario names a
// record file of its own (case: ./my-case.yaml), resolved against the
// scenario's folder; "" for a case id.
func (s *Scenario) CaseFile() string { return s.caseFile }

// Timeline is the fault timeline of a variant run.
type Timeline struct {
	// Warmup runs the workload before the first fault (and goes on, up to
	// as long again or a minute, whichever is longer, until the workload
	// is steady).
	Warmup Duration `yaml:"warmup" json:"warmup" jsonschema:"required"`
	// Faults, by offset from the end of the warm-up, in order.
	Faults []FaultStep `yaml:"faults" json:"faults" jsonschema:"required,minItems=1"`
	// Observe keeps measuring after the last fault ends.
	Observe Duration `yaml:"observe" json:"observe" jsonschema:"required"`
}

// FaultStep is one fault injection.
type FaultStep struct {
	// At is the offset from the end of the warm-up.
	At Duration `yaml:"at" json:"at"`
	// Fault is a registered fault (pause, kill-restart, add-capacity...).
	Fault string `yaml:"fault" json:"fault" jsonschema:"required"`
	// Target selects what it hits: a role (leader, follower, agent...),
	// every member of one (followers, agents), member:NAME, or a group of
	// the workload (clients, fleet); :N, :N% or :all picks how many.
	Target string `yaml:"target" json:"target" jsonschema:"required"`
	// Duration is how long the fault lasts.
	Duration Duration `yaml:"duration" json:"duration" jsonschema:"required"`
	// Params are the fault's parameters; what is left out keeps its default.
	Params yaml.Node `yaml:"params,omitempty" json:"-"`
}

// Variant is a named change to the workload and the topology.
type Variant struct {
	// Description says what the variant stands for (the client as the
	// incident ran it, or its fix).
	Description string `yaml:"description" json:"description" jsonschema:"required"`
	// Workload settings set here override the scenario's workload:
	// mappings merge key by key, anything else is replaced.
	Workload yaml.Node `yaml:"workload,omitempty" json:"-"`
	// Topology settings set here override the scenario's, the same way.
	Topology map[string]yaml.Node `yaml:"topology,omitempty" json:"-"`
	// Timeline changes the parameters of the scenario's fault steps for
	// this variant (a procedure's gate, what the operator does on a
	// timeout); when, what and whom each step hits stay the scenario's.
	Timeline *VariantTimeline `yaml:"timeline,omitempty" json:"timeline,omitempty"`
}

// VariantTimeline is what a variant changes in the fault timeline.
type VariantTimeline struct {
	// Faults are parameter overrides, each for one step of the scenario's
	// timeline.faults.
	Faults []StepOverride `yaml:"faults" json:"faults" jsonschema:"required,minItems=1"`
}

// StepOverride sets parameters of one fault step for a variant.
type StepOverride struct {
	// Step is the fault step it changes: 1 for the first of
	// timeline.faults, 2 for the second...
	Step int `yaml:"step" json:"step" jsonschema:"required,minimum=1"`
	// Params override the step's parameters: mappings merge key by key.
	Params yaml.Node `yaml:"params,omitempty" json:"-"`
	// Duration replaces how long the step is planned to last in this
	// variant: a procedure step that waits for its own gate (a deep gate
	// waits for a snapshot sync) takes longer than one that does not, and
	// the plan (chaoslab list, the progress line) should say so.
	Duration *Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
}

// Hypothesis, Comparison and Evidence are the verdict's (a scenario
// states them; verdict judges them).
type (
	Hypothesis = verdict.Hypothesis
	Comparison = verdict.Comparison
	Evidence   = verdict.Evidence
)

// Duration is a time.Duration written as "10s", "1m30s" (lab.Duration).
type Duration = lab.Duration

// Spec is what a run of the scenario is judged by.
func (s *Scenario) Spec() verdict.Spec {
	sp := verdict.Spec{Expect: map[string]verdict.Verdict{}, Hypotheses: s.withBest(), Comparisons: s.Comparisons, Evidence: s.Evidence}
	for v, e := range s.Expect {
		sp.Expect[v] = verdict.Verdict(e)
	}
	return sp
}

// Kind is the workload's kind.
func (s *Scenario) Kind() string { return s.kind }

// WorkloadFor is the workload's settings for a variant: the kind's
// defaults, the scenario's workload, then the variant's overrides.
func (s *Scenario) WorkloadFor(variant string) (lab.Settings, error) {
	v, ok := s.Variants[variant]
	if !ok {
		return nil, fmt.Errorf("scenario %s: no variant %q", s.ID, variant)
	}
	k, err := lab.GetKind(s.kind)
	if err != nil {
		return nil, err
	}
	st := k.NewSettings()
	node := merge(withoutKey(&s.Workload, "kind"), &v.Workload)
	if err := decode(node, st); err != nil {
		return nil, fmt.Errorf("scenario %s: variant %s: workload: %w", s.ID, variant, err)
	}
	return st, nil
}

// TopologyFor is the system's topology for a variant.
func (s *Scenario) TopologyFor(variant string) (lab.Settings, error) {
	v, ok := s.Variants[variant]
	if !ok {
		return nil, fmt.Errorf("scenario %s: no variant %q", s.ID, variant)
	}
	sys, err := lab.GetSystem(s.System)
	if err != nil {
		return nil, err
	}
	st := sys.NewTopology()
	base, over := s.Topology[s.System], v.Topology[s.System]
	if err := decode(merge(&base, &over), st); err != nil {
		return nil, fmt.Errorf("scenario %s: variant %s: topology: %w", s.ID, variant, err)
	}
	return st, nil
}

// FaultsFor is a variant's fault steps: the scenario's, with the
// variant's parameter overrides merged into the steps they name.
func (s *Scenario) FaultsFor(variant string) ([]FaultStep, error) {
	v, ok := s.Variants[variant]
	if !ok {
		return nil, fmt.Errorf("scenario %s: no variant %q", s.ID, variant)
	}
	steps := slices.Clone(s.Timeline.Faults)
	if v.Timeline == nil {
		return steps, nil
	}
	for _, o := range v.Timeline.Faults {
		if o.Step < 1 || o.Step > len(steps) {
			return nil, fmt.Errorf("scenario %s: variant %s: no fault step %d (the timeline has %d)", s.ID, variant, o.Step, len(steps))
		}
		st := &steps[o.Step-1]
		st.Params = *merge(&st.Params, &o.Params)
		if o.Duration != nil {
			st.Duration = *o.Duration
		}
	}
	return steps, nil
}

// NewFault is the step's fault, built from its parameters.
func (f FaultStep) NewFault() (faults.Fault, error) {
	flt, err := faults.New(f.Fault)
	if err != nil {
		return nil, err
	}
	if err := decode(&f.Params, flt); err != nil {
		return nil, fmt.Errorf("fault %s: params: %w", f.Fault, err)
	}
	return flt, nil
}

// ParamsMap is the step's parameters as plain values (for reports).
func (f FaultStep) ParamsMap() map[string]any {
	var m map[string]any
	if f.Params.Kind != 0 {
		_ = f.Params.Decode(&m)
	}
	return m
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

// RunLength is the longest variant's planned length: warm-up, faults,
// observation (RunLengthFor).
func (s *Scenario) RunLength() time.Duration {
	_, longest := s.RunLengths()
	return longest
}

// RunLengthFor is one variant's planned run: the warm-up, its fault steps
// one after another (a step starts at its offset from the warm-up's end
// or when the step before it ends, whichever is later: the runner injects
// them in turn) and the observation.
func (s *Scenario) RunLengthFor(variant string) time.Duration {
	steps, err := s.FaultsFor(variant)
	if err != nil {
		steps = s.Timeline.Faults
	}
	return plannedLength(s.Timeline, steps)
}

// RunLengths are the shortest and the longest planned run of a variant.
func (s *Scenario) RunLengths() (shortest, longest time.Duration) {
	if len(s.Variants) == 0 {
		l := plannedLength(s.Timeline, s.Timeline.Faults)
		return l, l
	}
	shortest = time.Duration(math.MaxInt64)
	for name := range s.Variants {
		l := s.RunLengthFor(name)
		shortest, longest = min(shortest, l), max(longest, l)
	}
	return shortest, longest
}

// LengthText is the planned length of a variant as a person reads it:
// "1m50s", or "1m50s to 3m40s" when variants differ.
func (s *Scenario) LengthText() string {
	shortest, longest := s.RunLengths()
	if shortest == longest {
		return longest.String()
	}
	return shortest.String() + " to " + longest.String()
}

func plannedLength(tl Timeline, steps []FaultStep) time.Duration {
	var end time.Duration
	for _, f := range steps {
		end = max(end, f.At.D()) + f.Duration.D()
	}
	return tl.Warmup.D() + end + tl.Observe.D()
}

// MetricNames are every metric the scenario judges or shows.
func (s *Scenario) MetricNames() []string {
	var out []string
	add := func(m string) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	for _, h := range s.Hypotheses {
		add(h.Metric)
	}
	for _, c := range s.Comparisons {
		add(c.Metric)
	}
	for _, e := range s.Evidence {
		add(e.Metric)
	}
	return out
}
