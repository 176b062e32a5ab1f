package training

import (
	"fmt"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// PlanFor builds the session's plan from the scenario's case record, the
// other records' causes and the charts the scenario's plug-ins draw (the
// plug-ins must be linked: harness/plugins). The records are those
// seeds.Get and seeds.Known know: the built-in ones and a user's own
// (--cases, or the scenario's case: path.yaml).
func PlanFor(s *scenarios.Scenario, seed int64) (*Plan, error) {
	ref := s.Case
	if f := s.CaseFile(); f != "" {
		ref = f
	}
	rec, err := seeds.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("plan training: %w", err)
	}
	all, err := seeds.Known()
	if err != nil {
		return nil, fmt.Errorf("plan training: %w", err)
	}
	others := make([]*seeds.Record, len(all))
	for i := range all {
		others[i] = &all[i]
	}
	k, err := lab.GetKind(s.Kind())
	if err != nil {
		return nil, fmt.Errorf("plan training: %w", err)
	}
	sys, err := lab.GetSystem(s.System)
	if err != nil {
		return nil, fmt.Errorf("plan training: %w", err)
	}
	return NewPlan(s, &rec, others, append(k.Series(), sys.Series()...), seed)
}
