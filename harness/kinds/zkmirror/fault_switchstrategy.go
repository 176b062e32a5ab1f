package zkmirror

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// StrategySwitcher is a running client whose strategy the lab can switch
// without restarting it (zk-tree-mirror's clients, through a control
// file each reads at every report).
type StrategySwitcher interface {
	// CheckSwitch says whether the client can switch to the strategy.
	CheckSwitch(strategy string, window int) error
	// SwitchStrategy tells the running client to use the strategy from
	// now on, and its later incarnations to start with it.
	SwitchStrategy(strategy string, window int) error
	// Strategy is the strategy the client reported it uses now ("": not
	// reported yet).
	Strategy() string
}

// SwitchStrategy switches running clients to another strategy (IL-0587's
// mitigation: tree mirrors from full-refresh to paced, a bounded window of
// reads that does not walk the tree again on a resumed session) while
// they run. The switch is for good; the fault waits up to the duration
// for every client to report the new strategy, and records how many did
// and how long they took.
type SwitchStrategy struct {
	// Strategy to switch to (zk-tree-mirror: paced or full-refresh).
	Strategy string `yaml:"strategy"`
	// Window bounds a paced client's reads in flight.
	Window int `yaml:"window"`
}

func init() {
	faults.Register(func() faults.Fault { return &SwitchStrategy{Strategy: "paced", Window: 8} })
}

func (*SwitchStrategy) Name() string { return "switch-strategy" }

// Check wants a strategy and a window; the kind checks their values.
func (f *SwitchStrategy) Check() []lab.Problem {
	var ps lab.Checks
	ps.Need(f.Strategy != "", "strategy", "want a strategy of the workload's clients (zk-tree-mirror: paced or full-refresh)")
	ps.Need(f.Window >= 1, "window", "want at least 1, got %d", f.Window)
	return ps
}

func (f *SwitchStrategy) Available(t faults.Target) error {
	s, ok := t.(StrategySwitcher)
	if !ok {
		return fmt.Errorf("switch-strategy: %s is not a client whose strategy the lab can switch (supported: zk-tree-mirror clients)", faults.TargetName(t))
	}
	return s.CheckSwitch(f.Strategy, f.Window)
}

func (f *SwitchStrategy) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	s := t.(StrategySwitcher)
	was := s.Strategy()
	began := time.Now()
	if err := s.SwitchStrategy(f.Strategy, f.Window); err != nil {
		return fmt.Errorf("switch strategy of %s: %w", t.Name(), err)
	}
	wctx, cancel := context.WithTimeout(ctx, max(d, time.Second))
	defer cancel()
	for s.Strategy() != f.Strategy {
		if !lab.Sleep(wctx, 100*time.Millisecond) {
			faults.Record(t, "strategy", fmt.Sprintf("switch to %s (window %d) asked; %s still reports %q after %s", f.Strategy, f.Window, t.Name(), s.Strategy(), d))
			faults.Missed(ctx, t, "the clients still report strategy %q", s.Strategy())
			return nil
		}
	}
	faults.Record(t, "strategy", fmt.Sprintf("switched from %s to %s (window %d), reported after %.1fs", orNone(was), f.Strategy, f.Window, time.Since(began).Seconds()))
	faults.Landed(ctx, t, "the clients report strategy %s", f.Strategy)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(not reported)"
	}
	return s
}
