package zkmirror

import (
	"fmt"
	"path/filepath"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// mirrorClient is one mirror client as a fault target: an instance, whose
// strategy can also be switched while it runs (switch-strategy).
type mirrorClient struct {
	*instances.Target
	w *workload
}

var _ StrategySwitcher = (*mirrorClient)(nil)

// controlDir is where the clients' control files are: in the run folder,
// which only chaoslab's own agents running as programs of this machine
// read ("": no switch).
func (w *workload) controlDir() string {
	if w.s.Program != nil || w.env.Site == nil || !lab.RunsHostCommands(w.env.Site.Placement()) {
		return ""
	}
	return filepath.Join(w.env.Dir, "control")
}

func (w *workload) controlPath(id string) string {
	if d := w.controlDir(); d != "" {
		return filepath.Join(d, id+".json")
	}
	return ""
}

// CheckSwitch says whether the client can switch to the strategy.
func (c *mirrorClient) CheckSwitch(strategy string, window int) error {
	sw := Switch{Strategy: strategy, Window: window}
	if c.w == nil { // a probe: the settings only
		return sw.check(NewSettings().Client)
	}
	if c.w.s.Program != nil {
		return fmt.Errorf("switch strategy: %s is the user's client program, which has no strategy the lab can switch", c.Name())
	}
	if c.w.controlDir() == "" {
		return fmt.Errorf("switch strategy: the clients' control files are read on the local placement only")
	}
	return sw.check(c.w.s.Client)
}

// SwitchStrategy writes the client's control file, which the running
// client reads at its next report; its later incarnations start with the
// strategy.
func (c *mirrorClient) SwitchStrategy(strategy string, window int) error {
	if err := c.CheckSwitch(strategy, window); err != nil {
		return err
	}
	sw := Switch{Strategy: strategy, Window: window}
	c.w.mu.Lock()
	if c.w.switched == nil {
		c.w.switched = map[int]Switch{}
	}
	c.w.switched[c.I] = sw
	c.w.mu.Unlock()
	return writeControl(c.w.controlPath(c.Name()), sw)
}

// Strategy is the strategy the client said it uses in its latest sample.
func (c *mirrorClient) Strategy() string {
	if c.w == nil {
		return ""
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if ss := c.w.samples[c.I]; len(ss) > 0 {
		return ss[len(ss)-1].s.Strategy
	}
	return ""
}

// Event puts a fault's event on the variant's timeline.
func (c *mirrorClient) Event(kind, source, detail string) {
	if c.w != nil {
		c.w.env.Event(kind, source, detail)
	}
}
