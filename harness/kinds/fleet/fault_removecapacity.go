package fleet

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// CapacityRemover is a front-end fleet whose servers can be taken out for
// good.
type CapacityRemover interface {
	CapacityTarget
	// Size is how many servers are part of the fleet, and how many of
	// those the capacity addition added.
	Size() (active, added int)
	// RemoveServers stops n servers and takes them out of the fleet for
	// good, the added ones first, the newest first; it returns their names.
	RemoveServers(ctx context.Context, n int) ([]string, error)
	// Threads is the most and the mean OS threads of the running servers
	// at their last health check, and their thread limit (0: none).
	Threads() (most int, mean float64, limit int)
}

// RemoveCapacity is the Kinesis responders' first action (IL-0384): the
// servers the capacity addition added are taken out of the fleet (or a
// number or a fraction of it), so that every remaining server needs fewer
// threads, one per peer. The removal is for good; the duration is how
// long the fault watches the fleet's threads before it records them.
type RemoveCapacity struct {
	// Servers is how many servers to remove, added ones first, newest
	// first (0: the servers add-capacity added).
	Servers int `yaml:"servers"`
	// Fraction of the fleet to remove instead of a number, rounded up
	// (0: not used).
	Fraction float64 `yaml:"fraction"`
}

func init() { faults.Register(func() faults.Fault { return &RemoveCapacity{} }) }

func (*RemoveCapacity) Name() string { return "remove-capacity" }

// ResponderKind: removing the added capacity was IL-0384's first action.
func (*RemoveCapacity) ResponderKind(string) string { return "remove-capacity" }

// Check wants a number or a fraction, not both.
func (f *RemoveCapacity) Check() []lab.Problem {
	var ps lab.Checks
	ps.Need(f.Servers >= 0 && f.Servers <= 10000, "servers", "want 0 (the added servers) to 10000, got %d", f.Servers)
	ps.Need(f.Fraction >= 0 && f.Fraction < 1, "fraction", "want 0 (not used) or more, under 1, got %g", f.Fraction)
	ps.Need(f.Servers == 0 || f.Fraction == 0, "fraction", "give servers or fraction, not both")
	return ps
}

func (*RemoveCapacity) Available(t faults.Target) error {
	if _, ok := t.(CapacityRemover); !ok {
		return fmt.Errorf("remove-capacity: target %s is not a front-end fleet", faults.TargetName(t))
	}
	return nil
}

// count is how many servers to remove from a fleet of active servers of
// which added were added.
func (f *RemoveCapacity) count(active, added int) (int, error) {
	n := added
	switch {
	case f.Servers > 0:
		n = f.Servers
	case f.Fraction > 0:
		n = int(math.Ceil(f.Fraction * float64(active)))
	case added == 0:
		return 0, fmt.Errorf("remove-capacity: the fleet has no added capacity (add-capacity has not run, or it was removed); give servers or fraction")
	}
	if n >= active {
		return 0, fmt.Errorf("remove-capacity: removing %d of the fleet's %d servers would leave none", n, active)
	}
	return n, nil
}

func (f *RemoveCapacity) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	c := t.(CapacityRemover)
	active, added := c.Size()
	n, err := f.count(active, added)
	if err != nil {
		return err
	}
	most, mean, limit := c.Threads()
	names, err := c.RemoveServers(ctx, n)
	if err != nil {
		return fmt.Errorf("remove capacity: %w", err)
	}
	faults.Record(t, "capacity", fmt.Sprintf("removed %d of %d servers (%s); threads per server before: most %d, mean %.1f%s",
		len(names), active, strings.Join(names, ", "), most, mean, ofLimit(limit)))
	proveProcs(ctx, t, names, "exited", func(p ServerProc) bool { return !p.Running })
	faults.Sleep(ctx, d)
	most2, mean2, _ := c.Threads()
	faults.Record(t, "capacity", fmt.Sprintf("%d servers left; threads per server %s after the removal: most %d (was %d), mean %.1f (was %.1f)%s",
		active-len(names), d, most2, most, mean2, mean, ofLimit(limit)))
	return nil
}

func ofLimit(limit int) string {
	if limit <= 0 {
		return ""
	}
	return fmt.Sprintf(", limit %d", limit)
}
