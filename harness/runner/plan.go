package runner

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/scenarios"
)

// newPlan resolves the scenario's plug-ins and settings and the
// placement, and refuses what cannot run here, before anything starts.
func newPlan(ctx context.Context, s *scenarios.Scenario, o *Options) (*plan, error) {
	p := &plan{s: s, topos: map[string]lab.Settings{}, works: map[string]lab.Settings{}}
	var err error
	if p.sys, err = lab.GetSystem(s.System); err != nil {
		return nil, fmt.Errorf("run scenario: %w", err)
	}
	if p.kind, err = lab.GetKind(s.Kind()); err != nil {
		return nil, fmt.Errorf("run scenario: %w", err)
	}
	for _, v := range o.Variants {
		if _, ok := s.Variants[v]; !ok {
			return nil, fmt.Errorf("run scenario: %s has no variant %q (has %s)", s.ID, v, strings.Join(s.VariantNames(), ", "))
		}
		if p.topos[v], err = s.TopologyFor(v); err != nil {
			return nil, err
		}
		if p.works[v], err = s.WorkloadFor(v); err != nil {
			return nil, err
		}
	}
	if err := p.choosePlacement(ctx, o); err != nil {
		return nil, err
	}
	if err := p.preflight(); err != nil {
		return nil, err
	}
	return p, nil
}

// choosePlacement resolves local, docker or auto; why says how auto chose.
func (p *plan) choosePlacement(ctx context.Context, o *Options) error {
	name := o.Placement
	if name == "" {
		name = "auto"
	}
	po := lab.PlacementOptions{AgentBinary: o.AgentBinary, AgentArgs: o.AgentArgs, Images: o.Images, Log: o.Logger}
	build := func(n string) error {
		f, err := lab.GetPlacement(n)
		if err != nil {
			return fmt.Errorf("run scenario: %w (or auto)", err)
		}
		p.plc, err = f(po)
		return err
	}
	if name != "auto" {
		if err := build(name); err != nil {
			return err
		}
		return p.plc.Available(ctx)
	}
	if pp, ok := p.kind.(lab.PlacementPreference); ok {
		pref, why := pp.PreferPlacement()
		p.why = "auto: " + why
		return build(pref)
	}
	if err := build("docker"); err != nil {
		return err
	}
	if err := p.workloadFits(); err != nil {
		p.why = "auto: " + err.Error() + "; using local processes"
		return build("local")
	}
	if err := p.plc.Available(ctx); err != nil {
		p.why = "auto: no Docker engine answers (" + err.Error() + "), using local processes"
		return build("local")
	}
	if err := p.plc.Prepare(ctx, p.images()); err != nil {
		p.why = "auto: a Docker engine answers but " + err.Error() + "; using local processes"
		return build("local")
	}
	p.why = "auto: a Docker engine answers and the images are here"
	return nil
}

// images are what the variants' topologies and workloads run from.
func (p *plan) images() []lab.ImageNeed {
	var out []lab.ImageNeed
	for _, sets := range []map[string]lab.Settings{p.topos, p.works} {
		for _, st := range sets {
			if n, ok := st.(lab.ImageNeeder); ok {
				for _, need := range n.Images() {
					if !slices.ContainsFunc(out, func(x lab.ImageNeed) bool { return x.Name == need.Name && x.Ref == need.Ref }) {
						out = append(out, need)
					}
				}
			}
		}
	}
	return out
}

// preflight refuses faults the placement's members or the workload's
// groups cannot take, and what the workload says it cannot do there.
func (p *plan) preflight() error {
	member, merr := p.sys.Probe(p.plc.Name())
	if merr != nil {
		return fmt.Errorf("check placement: %w", merr)
	}
	for _, name := range slices.Sorted(maps.Keys(p.works)) {
		if err := p.faultsFit(name, member); err != nil {
			return err
		}
	}
	if err := p.serverViewFits(); err != nil {
		return err
	}
	return p.workloadFits()
}

// serverViewFits refuses hypotheses on what the servers see of each
// client where the system's clients are counted by a relay of the lab's
// on loopback and the placement does not run them on this host.
func (p *plan) serverViewFits() error {
	if _, ok := p.sys.(lab.ClientRelayer); !ok || lab.RunsHostCommands(p.plc) {
		return nil
	}
	if m := p.s.ServerViewMetrics(); len(m) > 0 {
		return fmt.Errorf("check metrics: %s: %s counts them per client with %s, which needs the clients on this host: use --placement local", strings.Join(m, ", "), p.sys.Name(), p.sys.(lab.ConnLister).ListsClientConnections())
	}
	return nil
}

// faultsFit refuses a variant's fault steps (its parameters over the
// scenario's) that the placement's member or the workload's groups
// cannot take.
func (p *plan) faultsFit(variant string, member lab.Target) error {
	steps, err := p.s.FaultsFor(variant)
	if err != nil {
		return err
	}
	for i, step := range steps {
		f, err := step.NewFault()
		if err != nil {
			return err
		}
		sel, err := lab.ParseSelector(step.Target, p.sys.Roles(), p.kind.Groups())
		if err != nil {
			return fmt.Errorf("check faults: timeline.faults[%d]: %w", i, err)
		}
		var t lab.Target = member
		if sel.IsWorkload(p.kind.Groups()) {
			t = p.kind.Probe(sel.Group)
		}
		if err := f.Available(t); err != nil {
			return fmt.Errorf("check faults: %s: timeline.faults[%d] %s on the %s placement: %w", variant, i, step.Fault, p.plc.Name(), err)
		}
	}
	return nil
}

// workloadFits asks the kind whether every variant's workload can run on
// the placement.
func (p *plan) workloadFits() error {
	if pf, ok := p.kind.(lab.Preflighter); ok {
		for v, st := range p.works {
			if err := pf.Preflight(p.plc, st); err != nil {
				return fmt.Errorf("check workload of %s on the %s placement: %w", v, p.plc.Name(), err)
			}
		}
	}
	return nil
}

// prepare readies the placement (images, sweeps) and the system.
func (p *plan) prepare(ctx context.Context, log *slog.Logger) error {
	if err := p.plc.Prepare(ctx, p.images()); err != nil {
		return err
	}
	return p.sys.Prepare(ctx, p.plc, log)
}

// Preflight says whether s can run here with o, without starting anything
// but the placement's checks (images present, faults possible): what Run
// would refuse, it refuses.
func Preflight(ctx context.Context, s *scenarios.Scenario, o Options) error {
	s, err := s.Sized(o.Size)
	if err != nil {
		return err
	}
	if len(o.Variants) == 0 {
		o.Variants = s.DefaultVariants()
	}
	p, err := newPlan(ctx, s, &o)
	if err != nil {
		return err
	}
	return p.plc.Prepare(ctx, p.images())
}
