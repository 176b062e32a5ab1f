// Package faults holds the faults chaoslab injects, one per file, each
// registered by name. A fault acts on a Target (a cluster member chosen by
// role), lasts for a duration, and undoes itself before Inject returns, even
// when the run is interrupted. See README.md for how to add one.
package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Target is a member of a cluster a fault can act on. Every method acts
// only on a process or container the harness started itself.
type Target interface {
	Name() string
	Pause() error
	Resume() error
	Kill() error
	Restart(ctx context.Context) error
}

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

var (
	mu       sync.Mutex
	registry = map[string]Fault{}
)

// Register adds a fault under its name; a second fault of the same name panics.
func Register(f Fault) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[f.Name()]; dup {
		panic("faults: registered twice: " + f.Name())
	}
	registry[f.Name()] = f
}

// Get returns a registered fault.
func Get(name string) (Fault, error) {
	mu.Lock()
	defer mu.Unlock()
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("get fault: unknown fault %q (known: %s)", name, strings.Join(namesLocked(), ", "))
	}
	return f, nil
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

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
