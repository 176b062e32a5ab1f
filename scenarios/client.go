package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// WithClient is the scenario with one more variant: the workload run by
// a user's client program in place of the kind's own (the scenario's
// workload without any variant's overrides), expected to hold. It is
// built on the scenario's source text, so that the report's copy of the
// scenario has the variant too and re-checks the same way. name is the
// variant's (default: the program's base name).
func WithClient(s *Scenario, src []byte, p lab.ClientProgram) (*Scenario, string, []byte, error) {
	name := ClientVariantName(s, p)
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 {
		return nil, "", nil, fmt.Errorf("add client to %s: parse the scenario: %v", s.ID, err)
	}
	root := doc.Content[0]
	what := strings.Join(p.Command, " ")
	if p.Image != "" {
		what = strings.TrimSpace("image " + p.Image + " " + what)
	}
	variant := map[string]any{
		"description": "Your client, " + what + ", in place of the scenario's own under the incident's timeline (expected to hold).",
		"workload":    clientWorkload(s, p),
	}
	if err := setIn(root, []string{"variants", name}, variant); err != nil {
		return nil, "", nil, err
	}
	if err := setIn(root, []string{"expect", name}, "held"); err != nil {
		return nil, "", nil, err
	}
	if c, ok, err := contractOf(s); err != nil {
		return nil, "", nil, err
	} else if ok {
		if err := optionalUnmeasured(root, c); err != nil {
			return nil, "", nil, err
		}
		if err := judgedOnly(s.ID, root, c); err != nil {
			return nil, "", nil, err
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, "", nil, fmt.Errorf("add client to %s: %w", s.ID, err)
	}
	out, err := Parse(s.Source, buf.Bytes())
	if err == nil {
		out, err = out.Sized(s.Size)
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("add client to %s: %w", s.ID, err)
	}
	return out, name, buf.Bytes(), nil
}

// clientWorkload is the variant's workload: the program under program,
// or in place of the workload's own program fields where they are inline
// (every field set, so that none of the scenario's own program is left).
func clientWorkload(s *Scenario, p lab.ClientProgram) map[string]any {
	st, err := s.WorkloadFor(s.VariantNames()[0])
	if _, inline := st.(lab.InlineClient); err != nil || !inline {
		return map[string]any{"program": p}
	}
	return map[string]any{"name": p.Name, "command": p.Command, "image": p.Image, "env": p.Env}
}

// contractOf is the contract of the scenario's workload, when it hosts a
// user's program.
func contractOf(s *Scenario) (lab.Contract, bool, error) {
	st, err := s.WorkloadFor(s.VariantNames()[0])
	if err != nil {
		return lab.Contract{}, false, err
	}
	host, ok := st.(lab.ClientHost)
	if !ok {
		return lab.Contract{}, false, nil
	}
	return host.Contract(), true, nil
}

// optionalUnmeasured marks optional the hypotheses on metrics that the
// kind cannot measure from outside a user's program (Contract.NotMeasured):
// they are judged only where they are measured (the kind's own variants).
func optionalUnmeasured(root *yaml.Node, c lab.Contract) error {
	not := c.NotMeasured
	j := keyIndex(root, "hypotheses")
	if len(not) == 0 || j < 0 || root.Content[j+1].Kind != yaml.SequenceNode {
		return nil
	}
	for _, h := range root.Content[j+1].Content {
		if k := keyIndex(h, "metric"); k >= 0 && slices.Contains(not, h.Content[k+1].Value) {
			if err := setIn(h, []string{"optional"}, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// judgedOnly leaves out the hypotheses and comparisons on metrics that do
// not judge a user's program (Contract.Judged, Contract.NotJudged): they
// are about the lab's side of the scenario (the volumes the storage nodes
// leave stuck, a replacement's quorum), which no program of the user's
// changes.
func judgedOnly(id string, root *yaml.Node, c lab.Contract) error {
	if len(c.Judged) == 0 && len(c.NotJudged) == 0 {
		return nil
	}
	kept := 0
	for _, key := range []string{"hypotheses", "comparisons"} {
		j := keyIndex(root, key)
		if j < 0 || root.Content[j+1].Kind != yaml.SequenceNode {
			continue
		}
		seq := root.Content[j+1]
		seq.Content = slices.DeleteFunc(seq.Content, func(h *yaml.Node) bool {
			k := keyIndex(h, "metric")
			return k < 0 || !judges(c, h.Content[k+1].Value)
		})
		if key == "hypotheses" {
			kept = len(seq.Content)
		}
	}
	if kept == 0 {
		return fmt.Errorf("add client to %s: %w (chaoslab show %s --contract says what judges one)", id, ErrNothingJudged, id)
	}
	return nil
}

// ErrNothingJudged: none of a scenario's hypotheses is on what a user's
// program changes, so it cannot judge one.
var ErrNothingJudged = errors.New("none of its hypotheses is on what a client's program changes")

// ClientScenarios lists the scenario files (*.yaml) in dir of the given
// case whose workload hosts a user's program and that keep a hypothesis
// to judge it: where to go when a seed judges only the lab's side. A file
// that does not load is skipped.
func ClientScenarios(dir, caseID string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var out []string
	for _, path := range paths {
		s, err := Load(path)
		if err != nil || s.Case != caseID {
			continue
		}
		c, ok, err := contractOf(s)
		if err != nil || !ok {
			continue
		}
		if slices.ContainsFunc(s.Hypotheses, func(h Hypothesis) bool { return judges(c, h.Metric) }) {
			out = append(out, path)
		}
	}
	return out
}

// judges says whether metric (a name, or a reducer over a series) may
// judge a user's program under contract c.
func judges(c lab.Contract, metric string) bool {
	if len(c.Judged) > 0 && !slices.Contains(c.Judged, metric) {
		return false
	}
	for _, p := range c.NotJudged {
		if strings.HasPrefix(metric, p) || strings.Contains(metric, "("+p) {
			return false
		}
	}
	return true
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// ClientVariantName is the variant a client program runs as: its Name,
// else its command's (or image's) base name, made unique in the scenario.
func ClientVariantName(s *Scenario, p lab.ClientProgram) string {
	name := p.Name
	if name == "" && len(p.Command) > 0 {
		name = strings.TrimSuffix(filepath.Base(p.Command[len(p.Command)-1]), filepath.Ext(p.Command[len(p.Command)-1]))
		if len(p.Command) == 1 || strings.HasPrefix(p.Command[len(p.Command)-1], "-") {
			name = strings.TrimSuffix(filepath.Base(p.Command[0]), filepath.Ext(p.Command[0]))
		}
	}
	if name == "" && p.Image != "" {
		name = filepath.Base(strings.Split(p.Image, ":")[0])
	}
	name = nonName.ReplaceAllString(strings.ToLower(name), "-")
	name = strings.Trim(name[:min(len(name), MaxVariantLen-len("-client"))], "-") // room for one "-client"
	if name == "" {
		name = "client"
	}
	for _, taken := s.Variants[name]; taken; _, taken = s.Variants[name] {
		name += "-client"
	}
	return name
}

// setIn sets a mapping's value at a path of keys, creating mappings.
func setIn(n *yaml.Node, path []string, v any) error {
	for i, key := range path {
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("add client: %s is not a mapping", strings.Join(path[:i], "."))
		}
		j := keyIndex(n, key)
		if i == len(path)-1 {
			var val yaml.Node
			if err := val.Encode(v); err != nil {
				return err
			}
			if j >= 0 {
				n.Content[j+1] = &val
			} else {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &val)
			}
			return nil
		}
		if j < 0 {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.MappingNode})
			j = len(n.Content) - 2
		}
		n = n.Content[j+1]
	}
	return nil
}
