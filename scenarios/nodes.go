package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// merge is base with over laid on top: mappings merge key by key, any
// other value of over replaces base's. Neither node is changed.
func merge(base, over *yaml.Node) *yaml.Node {
	if over == nil || over.Kind == 0 || over.Tag == "!!null" {
		return base
	}
	if base == nil || base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		return over
	}
	out := *base
	out.Content = append([]*yaml.Node(nil), base.Content...)
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		j := keyIndex(&out, k.Value)
		if j < 0 {
			out.Content = append(out.Content, k, v)
			continue
		}
		out.Content[j+1] = merge(out.Content[j+1], v)
	}
	return &out
}

func keyIndex(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// withoutKey is a mapping without one of its keys.
func withoutKey(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return n
	}
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return &out
}

// scalar is the value of a mapping's key ("" when absent).
func scalar(n *yaml.Node, key string) (string, *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return "", nil
	}
	if i := keyIndex(n, key); i >= 0 {
		return n.Content[i+1].Value, n.Content[i+1]
	}
	return "", nil
}

// decode decodes a checked node into a plug-in's settings (which hold the
// defaults) and returns the settings' own problems as an error.
func decode(n *yaml.Node, into any) error {
	if n != nil && n.Kind != 0 && n.Tag != "!!null" {
		if err := n.Decode(into); err != nil {
			return err
		}
	}
	var ps []lab.Problem
	switch v := into.(type) {
	case lab.Settings:
		ps = v.Check()
	case faults.Checker:
		ps = v.Check()
	}
	if len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.Field + ": " + p.Msg
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// settings checks a node against a plug-in's settings type (unknown keys,
// wrong kinds), decodes it and checks the values; every problem is
// reported at its line, below path. It returns the decoded settings when
// they are valid (nil otherwise, or when into is not lab.Settings).
func (c *checker) settings(n *yaml.Node, into any, path string) lab.Settings {
	before := len(c.errs)
	if n != nil && n.Kind != 0 {
		c.walk(n, reflect.TypeOf(into), path)
	}
	if len(c.errs) > before {
		return nil
	}
	if n != nil && n.Kind != 0 && n.Tag != "!!null" {
		if err := n.Decode(into); err != nil {
			c.add(n, path, "%v", err)
			return nil
		}
	}
	var ps []lab.Problem
	switch v := into.(type) {
	case lab.Settings:
		ps = v.Check()
	case faults.Checker:
		ps = v.Check()
	}
	for _, p := range ps {
		at := n
		if n != nil && n.Kind == yaml.MappingNode {
			at = lookup(n, p.Field)
		}
		c.add(at, join(path, p.Field), "%s", p.Msg)
	}
	st, _ := into.(lab.Settings)
	if len(c.errs) > before {
		return nil
	}
	return st
}

// walkPlugins checks the structure of the parts the plug-ins own (the
// system's topology, the workload's settings, each fault's parameters),
// on the raw document, so that every structural problem is reported at
// once with the scenario's own. Names that are not registered are left to
// validate, which says so.
func (c *checker) walkPlugins(root *yaml.Node) {
	sysName, _ := scalar(root, "system")
	sys, serr := lab.GetSystem(sysName)
	work := valueOf(root, "workload")
	kindName, _ := scalar(work, "kind")
	k, kerr := lab.GetKind(kindName)
	if kerr == nil && !slices.Contains(k.Systems(), sysName) {
		kerr = errNotHere // validate says why
	}
	topo := func(n *yaml.Node, path string) {
		if t := valueOf(n, sysName); serr == nil && t != nil {
			c.walk(t, reflect.TypeOf(sys.NewTopology()), path+"."+sysName)
		}
	}
	wl := func(n *yaml.Node, path string) {
		if kerr == nil && n != nil {
			c.walk(withoutKey(n, "kind"), reflect.TypeOf(k.NewSettings()), path)
		}
	}
	topo(valueOf(root, "topology"), "topology")
	wl(work, "workload")
	if vs := valueOf(root, "variants"); vs != nil && vs.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(vs.Content); i += 2 {
			p := "variants." + vs.Content[i].Value
			topo(valueOf(valueOf(vs.Content[i+1], "topology"), sysName), p+".topology")
			wl(valueOf(vs.Content[i+1], "workload"), p+".workload")
		}
	}
	steps := valueOf(valueOf(root, "timeline"), "faults")
	if steps == nil || steps.Kind != yaml.SequenceNode {
		return
	}
	for i, st := range steps.Content {
		name, _ := scalar(st, "fault")
		if f, err := faults.New(name); err == nil {
			if params := valueOf(st, "params"); params != nil {
				c.walk(params, reflect.TypeOf(f), fmt.Sprintf("timeline.faults[%d].params", i))
			}
		}
	}
	c.walkOverrides(valueOf(root, "variants"), steps)
}

// walkOverrides checks the structure of the variants' fault parameters
// against the faults of the steps they change (a step that does not
// exist is left to validate, which says so).
func (c *checker) walkOverrides(vs, steps *yaml.Node) {
	if vs == nil || vs.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(vs.Content); i += 2 {
		ovs := valueOf(valueOf(vs.Content[i+1], "timeline"), "faults")
		if ovs == nil || ovs.Kind != yaml.SequenceNode {
			continue
		}
		for j, o := range ovs.Content {
			step, _ := scalar(o, "step")
			n, err := strconv.Atoi(step)
			params := valueOf(o, "params")
			if err != nil || n < 1 || n > len(steps.Content) || params == nil {
				continue
			}
			name, _ := scalar(steps.Content[n-1], "fault")
			if f, err := faults.New(name); err == nil {
				c.walk(params, reflect.TypeOf(f), fmt.Sprintf("variants.%s.timeline.faults[%d].params", vs.Content[i].Value, j))
			}
		}
	}
}

// valueOf is a mapping's value for a key (nil when absent).
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	if i := keyIndex(n, key); i >= 0 {
		return n.Content[i+1]
	}
	return nil
}

var errNotHere = errors.New("the kind does not run on the system")
