package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
)

// CapacityTarget is a front-end fleet as the fleet faults see it (IL-0384). The
// fleet is also a Target: Name is "fleet".
type CapacityTarget interface {
	Name() string
	// AddCapacity starts the added servers and returns their names.
	AddCapacity(ctx context.Context) (added []string, err error)
	// RemoveCapacity stops the added servers and takes them out of the fleet.
	RemoveCapacity(ctx context.Context) error
	// Restart restarts every server at the fleet's restart rate; servers
	// that die or are removed later are restarted at the same pace.
	Restart(ctx context.Context) error
	// WaitReady waits until every server of the fleet routes.
	WaitReady(ctx context.Context) error
}

// AddCapacity adds servers to a front-end fleet for the duration, then
// removes them again: the incident's capacity addition (02:44-03:47 PST)
// and its removal as a precaution. What the addition does to the fleet's
// threads happens while it lasts; removing it does not restart anything.
type AddCapacity struct{}

func init() { faults.Register(func() faults.Fault { return &AddCapacity{} }) }

func (*AddCapacity) Name() string { return "add-capacity" }

func (*AddCapacity) Available(t faults.Target) error {
	if _, ok := t.(CapacityTarget); !ok {
		return fmt.Errorf("add-capacity: target %s is not a front-end fleet", faults.TargetName(t))
	}
	return nil
}

func (*AddCapacity) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	f := t.(CapacityTarget)
	added, err := f.AddCapacity(ctx)
	if err != nil {
		return fmt.Errorf("add capacity: %w", err)
	}
	proveProcs(ctx, t, added, "started by the placement", func(p ServerProc) bool { return p.Starts > 0 })
	faults.Sleep(ctx, d)
	if err := f.RemoveCapacity(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("remove capacity: %w", err)
	}
	return nil
}

// ServerProc is a server's last process, whether it runs, and how many
// times the placement started it.
type ServerProc struct {
	Desc    string
	Running bool
	Starts  int
}

// ProcReader is a fleet that says what process each server ran last
// (Fleet.Procs).
type ProcReader interface {
	Procs() map[string]ServerProc
}

// proveProcs reads back whether each named server is as want says (a
// started server of the addition; a removed one exited), and records it.
func proveProcs(ctx context.Context, t faults.Target, names []string, what string, want func(ServerProc) bool) {
	r, ok := t.(ProcReader)
	if !ok {
		faults.Unverified(ctx, t, "%s's processes cannot be read back", t.Name())
		return
	}
	procs := r.Procs()
	var as []string
	for _, n := range names {
		if p, ok := procs[n]; ok && want(p) {
			as = append(as, n+" ("+p.Desc+")")
		}
	}
	if len(names) > 0 && len(as) == len(names) {
		faults.Landed(ctx, t, "%d of %d servers %s: %s", len(as), len(names), what, strings.Join(as, ", "))
		return
	}
	faults.Missed(ctx, t, "%d of %d servers %s", len(as), len(names), what)
}

// restarted reads back how many servers were started again since before.
func restarted(ctx context.Context, t faults.Target, before map[string]ServerProc) {
	r, ok := t.(ProcReader)
	if !ok || before == nil {
		faults.Unverified(ctx, t, "%s's processes cannot be read back", t.Name())
		return
	}
	n := 0
	for id, p := range r.Procs() {
		if b, ok := before[id]; ok && p.Starts > b.Starts {
			n++
		}
	}
	if n == 0 {
		faults.Missed(ctx, t, "no server was started again after the restart began")
		return
	}
	faults.Landed(ctx, t, "%d of %d servers started again by the placement since the restart began", n, len(before))
}
