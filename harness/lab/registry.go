package lab

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// registry holds the plug-ins of one kind by name.
type registry[T any] struct {
	what string
	mu   sync.Mutex
	m    map[string]T
}

func (r *registry[T]) add(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("lab: %s %q registered twice", r.what, name))
	}
	r.m[name] = v
}

func (r *registry[T]) get(name string) (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	if !ok {
		var zero T
		known := r.namesLocked()
		if len(known) == 0 {
			return zero, fmt.Errorf("unknown %s %q (none registered: link harness/plugins)", r.what, name)
		}
		return zero, fmt.Errorf("unknown %s %q (known: %s)", r.what, name, strings.Join(known, ", "))
	}
	return v, nil
}

func (r *registry[T]) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.namesLocked()
}

func (r *registry[T]) namesLocked() []string {
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var (
	systems    = registry[System]{what: "system"}
	kinds      = registry[Kind]{what: "workload kind"}
	placements = registry[PlacementFactory]{what: "placement"}
	agents     = registry[Agent]{what: "agent"}
)

// RegisterSystem adds a coordination service (zookeeper, etcd, consul).
func RegisterSystem(s System) { systems.add(s.Name(), s) }

// GetSystem returns a registered system.
func GetSystem(name string) (System, error) { return systems.get(name) }

// SystemNames lists the registered systems.
func SystemNames() []string { return systems.names() }

// RegisterKind adds a workload kind.
func RegisterKind(k Kind) { kinds.add(k.Name(), k) }

// GetKind returns a registered workload kind.
func GetKind(name string) (Kind, error) { return kinds.get(name) }

// KindNames lists the registered workload kinds.
func KindNames() []string { return kinds.names() }

// RegisterPlacement adds a placement (local, docker) by its constructor.
func RegisterPlacement(name string, f PlacementFactory) { placements.add(name, f) }

// GetPlacement returns a registered placement's constructor.
func GetPlacement(name string) (PlacementFactory, error) { return placements.get(name) }

// PlacementNames lists the registered placements.
func PlacementNames() []string { return placements.names() }

// RegisterAgent adds a program chaoslab runs as a process of its own
// (`chaoslab agent NAME --config JSON`), e.g. a workload's client.
func RegisterAgent(a Agent) { agents.add(a.Name, a) }

// GetAgent returns a registered agent program.
func GetAgent(name string) (Agent, error) { return agents.get(name) }

// AgentNames lists the registered agent programs.
func AgentNames() []string { return agents.names() }
