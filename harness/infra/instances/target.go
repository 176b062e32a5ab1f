package instances

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Procs is what a Target needs of a group: instance names and processes.
type Procs interface {
	ID(i int) string
	Proc(i int) lab.Proc
}

// Target is instance I of a group as a fault sees it; with no group it is
// the probe a preflight check asks what a fault could do to one.
type Target struct {
	G Procs
	I int
}

// Targets are every instance of g.
func Targets(g Procs, n int) []lab.Target {
	out := make([]lab.Target, n)
	for i := range out {
		out[i] = &Target{G: g, I: i}
	}
	return out
}

func (c *Target) Name() string {
	if c.G == nil {
		return "client"
	}
	return c.G.ID(c.I)
}

func (c *Target) do(f func(lab.Proc) error) error {
	if c.G == nil {
		return errors.New("no client")
	}
	p := c.G.Proc(c.I)
	if p == nil {
		return fmt.Errorf("%s is not running", c.Name())
	}
	return f(p)
}

func (c *Target) Pause() error  { return c.do(lab.Proc.Pause) }
func (c *Target) Resume() error { return c.do(lab.Proc.Resume) }
func (c *Target) Kill() error {
	return c.do(func(p lab.Proc) error { return p.Signal(syscall.SIGKILL) })
}

// Restart kills the instance: its group's restart policy brings it back.
func (c *Target) Restart(context.Context) error { return c.Kill() }

// holder is a group whose instances an operator can hold down (Group).
type holder interface {
	Hold(i int) error
	Release(i int)
}

// Stop holds the instance down: killed, and not restarted until Start.
func (c *Target) Stop() error {
	h, ok := c.G.(holder)
	if !ok {
		return fmt.Errorf("%s cannot be held down", c.Name())
	}
	return h.Hold(c.I)
}

// Start lets a held instance start again.
func (c *Target) Start(context.Context) error {
	h, ok := c.G.(holder)
	if !ok {
		return fmt.Errorf("%s cannot be held down", c.Name())
	}
	h.Release(c.I)
	return nil
}
