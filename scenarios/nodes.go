package scenarios

import (
	"errors"
	"reflect"
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
	if n.Kind != yaml.MappingNode {
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
// reported at its line, below path.
func (c *checker) settings(n *yaml.Node, into any, path string) {
	before := len(c.errs)
	if n != nil && n.Kind != 0 {
		c.walk(n, reflect.TypeOf(into), path)
	}
	if len(c.errs) > before {
		return
	}
	if n != nil && n.Kind != 0 && n.Tag != "!!null" {
		if err := n.Decode(into); err != nil {
			c.add(n, path, "%v", err)
			return
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
}
