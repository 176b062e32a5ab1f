package faults

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/record"
)

// Proofs collects what the faults of one step read back of their targets
// to show that they took effect. The runner puts one in the context it
// gives Inject (WithProofs); a fault calls Landed, Missed or Unverified.
type Proofs struct {
	mu    sync.Mutex
	clock func() float64
	list  []lab.Proof
}

type proofsKey struct{}

// WithProofs returns ctx carrying a fresh collection, whose proofs are
// stamped by clock (seconds on the variant's clock).
func WithProofs(ctx context.Context, clock func() float64) (context.Context, *Proofs) {
	p := &Proofs{clock: clock}
	return context.WithValue(ctx, proofsKey{}, p), p
}

// List is what was collected, in order.
func (p *Proofs) List() []lab.Proof {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]lab.Proof(nil), p.list...)
}

func prove(ctx context.Context, t Target, landed, format string, args ...any) {
	p, _ := ctx.Value(proofsKey{}).(*Proofs)
	if p == nil {
		return
	}
	pr := lab.Proof{Target: TargetName(t), Landed: landed, Observed: fmt.Sprintf(format, args...)}
	if p.clock != nil {
		pr.T = p.clock()
	}
	p.mu.Lock()
	p.list = append(p.list, pr)
	p.mu.Unlock()
}

// Landed records what was read back of t that shows the fault took effect.
func Landed(ctx context.Context, t Target, format string, args ...any) {
	prove(ctx, t, record.Landed, format, args...)
}

// Missed records what was read back of t that shows the fault did not
// take effect: the variant is then inconclusive.
func Missed(ctx context.Context, t Target, format string, args ...any) {
	prove(ctx, t, record.Missed, format, args...)
}

// Unverified records that t has nothing the fault can read back.
func Unverified(ctx context.Context, t Target, format string, args ...any) {
	prove(ctx, t, record.Unverified, format, args...)
}

// StateReader is a target whose process state can be read back from the
// kernel or the engine (a server of any placement): lab.StateRunning,
// StatePaused or StateExited.
type StateReader interface {
	State(ctx context.Context) (string, error)
}

// stateSettle bounds the wait for a state to show: a signal is acted on
// when the process next runs, later under a tight CPU quota.
const stateSettle = 3 * time.Second

// proveState reads t's state back, until it is want or stateSettle has
// passed, and records whether it became want.
func proveState(ctx context.Context, t Target, want string) {
	r, ok := t.(StateReader)
	if !ok {
		Unverified(ctx, t, "%s has no state to read back", t.Name())
		return
	}
	rctx := context.WithoutCancel(ctx)
	began := time.Now()
	for {
		got, err := r.State(rctx)
		switch {
		case err != nil:
			Unverified(ctx, t, "state not read back: %v", err)
			return
		case got == want:
			Landed(ctx, t, "state %s, read back from its placement after %s", got, time.Since(began).Round(time.Millisecond))
			return
		case time.Since(began) > stateSettle:
			Missed(ctx, t, "state %s, read back from its placement for %s (want %s)", got, stateSettle, want)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitedBefore reports whether t had already exited before a fault that
// acts on a live process, and records the miss.
func exitedBefore(ctx context.Context, t Target, fault string) bool {
	r, ok := t.(StateReader)
	if !ok {
		return false
	}
	if st, err := r.State(context.WithoutCancel(ctx)); err == nil && st == lab.StateExited {
		Missed(ctx, t, "%s had already exited: nothing to %s", t.Name(), fault)
		return true
	}
	return false
}
