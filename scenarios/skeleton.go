package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// SkeletonOptions say what a new scenario is for.
type SkeletonOptions struct {
	// Case is the case record's id, or a path to a record of the user's.
	Case string
	// System and Kind name the plug-ins; ID is the scenario's id.
	System, Kind, ID string
}

// Skeleton writes a scenario for o that validates as written: the
// system's topology and the kind's settings with their defaults (commented
// out, each with what it means), one fault, a vulnerable and a mitigated
// variant, and a hypothesis every system can judge, each commented with
// what to change.
func Skeleton(o SkeletonOptions) ([]byte, error) {
	sys, err := lab.GetSystem(o.System)
	if err != nil {
		return nil, fmt.Errorf("new scenario: %w", err)
	}
	k, err := lab.GetKind(o.Kind)
	if err != nil {
		return nil, fmt.Errorf("new scenario: %w", err)
	}
	if !slices.Contains(k.Systems(), o.System) {
		return nil, fmt.Errorf("new scenario: the %s kind runs against %s, not %s", o.Kind, strings.Join(k.Systems(), ", "), o.System)
	}
	topo, work, err := pluginSettings(o.System, o.Kind)
	if err != nil {
		return nil, fmt.Errorf("new scenario: %w", err)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# yaml-language-server: $schema=./schema.json  (chaoslab schema > schema.json)\n")
	w("# A new scenario: every line below validates as written; change what the\n")
	w("# comments say, then `chaoslab validate FILE` and `chaoslab show FILE`.\n")
	w("# Every setting and metric: `chaoslab schema`, `chaoslab metrics --workload %s`,\n# `chaoslab faults`, or scenarios/reference.md.\n", o.Kind)
	w("id: %s\n", o.ID)
	w("title: %s\n", yamlScalar("What the incident did, in one line (edit me)"))
	w("# The case record this scenario replays: a built-in id, or a path to\n# a record of yours (relative to this file).\n")
	w("case: %s\n", yamlScalar(o.Case))
	w("system: %s\n", o.System)
	w("description: |\n  What runs, what goes wrong and what each variant changes, in a few\n  sentences of your own (edit me).\n")
	w("# Each setting is at its default: uncomment one to change it.\n")
	w("topology:\n  %s:\n", o.System)
	writeCommented(&b, topo, "    ")
	w("workload:\n  kind: %s\n", o.Kind)
	writeRequired(&b, k.NewSettings(), "  ")
	writeCommented(&b, work, "  ")
	w("timeline:\n")
	w("  # The warm-up must outlast the clients' first load: the steady-state\n  # check judges it before the first fault.\n")
	w("  warmup: 30s\n  faults:\n")
	w("    # One step: pause (SIGSTOP) the leader for 15 s. Targets: a role\n    # (%s), ROLE:N, ROLE:all, or a workload group (%s).\n", strings.Join(sys.Roles(), ", "), strings.Join(k.Groups(), ", "))
	w("    - at: 0s\n      fault: pause\n      target: leader\n      duration: 15s\n")
	w("  observe: 30s\n")
	w("variants:\n")
	w("  vulnerable:\n    description: The settings of the incident as it happened (edit me).\n")
	w("    # workload: {...}  the settings that differ from the above\n")
	w("  mitigated:\n    description: The settings after the write-up's fixes (edit me).\n")
	w("    # workload: {...}\n")
	w("hypotheses:\n")
	w("  # Replace with what the write-up says broke, as a measured figure:\n  # `chaoslab metrics --workload %s` lists them, with units.\n", o.Kind)
	w("  - id: leader-kept\n    description: The cluster is never more than 10 s without a leader.\n")
	w("    metric: cluster.leaderless_s\n    op: \"<=\"\n    threshold: 10\n")
	w("expect:\n  vulnerable: violated\n  mitigated: held\n")
	return []byte(b.String()), nil
}

// pluginSettings are the system's topology and the kind's settings, from
// the schema built in.
func pluginSettings(system, kind string) (topo, work []Setting, err error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		return nil, nil, fmt.Errorf("read schema: %w", err)
	}
	if t, ok := s.Properties.Get("topology"); ok && t.Properties != nil {
		if sys, ok := t.Properties.Get(system); ok {
			topo = settingRows(sys, "")
		}
	}
	if wl, ok := s.Properties.Get("workload"); ok {
		for _, b := range wl.OneOf {
			if b.Properties == nil {
				continue
			}
			if c, ok := b.Properties.Get("kind"); ok && c.Const == kind {
				work = settingRows(b, "")
			}
		}
	}
	return topo, work, nil
}

// writeCommented writes each setting commented out, with its default and
// what it means; nested settings under their parent's key, so that
// uncommenting a line keeps the YAML whole.
func writeCommented(b *strings.Builder, rows []Setting, indent string) {
	var parents []string
	for _, r := range rows {
		if r.Key == "kind" {
			continue
		}
		path := strings.Split(r.Key, ".")
		same := 0
		for same < len(parents) && same < len(path)-1 && parents[same] == path[same] {
			same++
		}
		parents = parents[:same]
		for _, p := range path[same : len(path)-1] {
			fmt.Fprintf(b, "%s# %s%s:\n", indent, strings.Repeat("  ", len(parents)), p)
			parents = append(parents, p)
		}
		fmt.Fprintf(b, "%s# %s%s: %s", indent, strings.Repeat("  ", len(parents)), path[len(path)-1], yamlDefault(r.Default))
		if doc := r.Doc; doc != "" {
			if len(doc) > 100 {
				doc = doc[:97] + "..."
			}
			fmt.Fprintf(b, "  # %s", doc)
		}
		b.WriteString("\n")
	}
}

// yamlDefault is a default as one line of YAML.
func yamlDefault(v any) string {
	if v == nil {
		return "null"
	}
	out, _ := yaml.Marshal(v)
	if def := strings.TrimSpace(string(out)); !strings.Contains(def, "\n") {
		return def
	}
	j, _ := json.Marshal(v)
	return string(j)
}

// writeRequired writes what a kind cannot run without (an exec program's
// command), where its settings say so.
func writeRequired(b *strings.Builder, st lab.Settings, indent string) {
	r, ok := st.(lab.Required)
	if !ok {
		return
	}
	for _, line := range r.Required() {
		fmt.Fprintf(b, "%s%s\n", indent, line)
	}
}

// yamlScalar quotes s as YAML needs.
func yamlScalar(s string) string {
	out, _ := yaml.Marshal(s)
	return strings.TrimSpace(string(out))
}
