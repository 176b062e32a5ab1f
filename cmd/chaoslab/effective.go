package main

import (
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

// effectiveVariant is one variant as a run would take it: the settings
// merged over their defaults, the fault steps with their parameters, and
// what the kind derives from its settings.
type effectiveVariant struct {
	Name     string          `json:"name"`
	Expect   string          `json:"expect,omitempty"`
	Length   string          `json:"length"`
	Topology lab.Settings    `json:"topology"`
	Workload lab.Settings    `json:"workload"`
	Facts    []lab.Fact      `json:"facts,omitempty"`
	Faults   []effectiveStep `json:"faults"`
}

type effectiveStep struct {
	At       string         `yaml:"at" json:"at"`
	Fault    string         `yaml:"fault" json:"fault"`
	Target   string         `yaml:"target" json:"target"`
	Duration string         `yaml:"duration" json:"duration"`
	Params   map[string]any `yaml:"params,omitempty" json:"params,omitempty"`
}

// effective resolves every variant of s.
func effective(s *scenarios.Scenario) ([]effectiveVariant, error) {
	var out []effectiveVariant
	for _, name := range s.VariantNames() {
		v := effectiveVariant{Name: name, Expect: string(s.Expect[name]), Length: lab.Duration(s.RunLengthFor(name)).String()}
		var err error
		if v.Topology, err = s.TopologyFor(name); err != nil {
			return nil, err
		}
		if v.Workload, err = s.WorkloadFor(name); err != nil {
			return nil, err
		}
		if d, ok := v.Workload.(lab.Describer); ok {
			v.Facts = d.Facts()
		}
		steps, err := s.FaultsFor(name)
		if err != nil {
			return nil, err
		}
		for _, st := range steps {
			f, err := st.NewFault()
			if err != nil {
				return nil, err
			}
			var params map[string]any
			if b, err := yaml.Marshal(f); err == nil {
				_ = yaml.Unmarshal(b, &params)
			}
			v.Faults = append(v.Faults, effectiveStep{At: st.At.String(), Fault: st.Fault, Target: st.Target, Duration: st.Duration.String(), Params: params})
		}
		out = append(out, v)
	}
	return out, nil
}

// showEffective prints each variant as a run would take it.
func showEffective(out io.Writer, s *scenarios.Scenario, j bool) error {
	vs, err := effective(s)
	if err != nil {
		return errInput(fmt.Errorf("show %s --effective: %w", s.ID, err))
	}
	if j {
		return writeJSON(out, struct {
			ID       string             `json:"id"`
			Variants []effectiveVariant `json:"variants"`
		}{s.ID, vs})
	}
	for i, v := range vs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "# variant %s", v.Name)
		if v.Expect != "" {
			fmt.Fprintf(out, " (expected %s)", v.Expect)
		}
		fmt.Fprintf(out, ", %s\n", v.Length)
		for _, f := range v.Facts {
			fmt.Fprintf(out, "#   %s: %s\n", f.Name, f.Value)
		}
		enc := yaml.NewEncoder(out)
		enc.SetIndent(2)
		doc := struct {
			Topology map[string]lab.Settings `yaml:"topology"`
			Kind     string                  `yaml:"kind"`
			Workload lab.Settings            `yaml:"workload"`
			Faults   []effectiveStep         `yaml:"faults"`
		}{map[string]lab.Settings{s.System: v.Topology}, s.Kind(), v.Workload, v.Faults}
		if err := enc.Encode(doc); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
	}
	return nil
}
