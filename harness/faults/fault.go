// Package faults holds the faults chaoslab injects, one per file, each
// registered by name with a constructor. A scenario's fault step names the
// fault, gives its parameters (decoded into a fresh value the constructor
// returned, so the constructor's values are the defaults, as toxiproxy
// builds a toxic from its attributes) and a target selector. A fault acts
// on a Target (a cluster member, a workload's group), lasts for a
// duration, and undoes itself before Inject returns, even when the run is
// interrupted. See README.md for how to add one.
package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"gopkg.in/yaml.v3"
)

// Target is what a fault acts on (lab.Target).
type Target = lab.Target

// Duration is a parameter's duration, written "10s" (lab.Duration).
type Duration = lab.Duration

// Fault is one kind of failure.
type Fault interface {
	// Name is the registered name scenarios use.
	Name() string
	// Available reports whether the fault can act on this target here.
	Available(t Target) error
	// Inject applies the fault for d, then undoes it. It blocks until the
	// target is restored; a cancelled ctx ends the fault early but still
	// restores the target.
	Inject(ctx context.Context, t Target, d time.Duration) error
}

// Generic are the faults every placement implements on every server of
// every system (lab.Server): a system gets them all by building its
// members on servers.Member.
var Generic = []string{"pause", "kill-restart", "stop", "replace", "cpu-throttle", "set-memory-limit", "disconnect"}

// Checker is implemented by a fault whose parameters can be wrong: Check
// says what is wrong before anything starts.
type Checker interface {
	Check() []lab.Problem
}

var (
	mu       sync.Mutex
	registry = map[string]func() Fault{}
)

// Register adds a fault by its constructor, which returns a pointer to a
// fresh value with the parameters' defaults; a second fault of the same
// name panics.
func Register(newFault func() Fault) {
	name := newFault().Name()
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("faults: registered twice: " + name)
	}
	registry[name] = newFault
}

// New returns a fresh value of a registered fault, with its defaults.
func New(name string) (Fault, error) {
	mu.Lock()
	defer mu.Unlock()
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("get fault: unknown fault %q (known: %s)", name, strings.Join(namesLocked(), ", "))
	}
	return f(), nil
}

// Names lists the registered faults.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	return namesLocked()
}

func namesLocked() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Sleep waits for d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// MustNew is New for a fault known to be registered (tests, examples).
func MustNew(name string) Fault {
	f, err := New(name)
	if err != nil {
		panic(err)
	}
	return f
}

func TargetName(t Target) string {
	if t == nil {
		return "(none)"
	}
	return t.Name()
}

// DecodeParams decodes a step's params (a YAML mapping) into f as a
// scenario's are, and returns the first problem its Check finds.
func DecodeParams(f Fault, params string) error {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(params), &n); err != nil {
		return fmt.Errorf("decode params: %w", err)
	}
	if len(n.Content) > 0 && n.Content[0].Kind == yaml.MappingNode {
		if err := n.Content[0].Decode(f); err != nil {
			return err
		}
	}
	if c, ok := f.(Checker); ok {
		if ps := c.Check(); len(ps) > 0 {
			return fmt.Errorf("%s: %s", ps[0].Field, ps[0].Msg)
		}
	}
	return nil
}

// Revised is implemented by a fault whose proof that it landed was made
// stricter after runs were kept: a run judged before since rests on the
// weaker proof, so reproduction rates do not count it (what lists why).
type Revised interface {
	ProofRevised() (since time.Time, what string)
}
