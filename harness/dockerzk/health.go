package dockerzk

// The health rules are harness/zkcheck's, the same that judge
// harness/zkensemble: only the member type and how "running"/"paused" are
// learnt differ (here from the engine's container state).

import (
	"context"
	"time"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// check is the ensemble as harness/zkcheck's health rules see it.
func (e *Ensemble) check() zkcheck.Ensemble[*Member] {
	return zkcheck.Ensemble[*Member]{
		Members:  func() []*Member { return e.members },
		Name:     (*Member).Name,
		ID:       (*Member).ID,
		RunState: runState,
		Mntr:     func(ctx context.Context, m *Member) (map[string]string, error) { return m.Mntr(ctx) },
	}
}

// runState asks the engine for the member's container state; no container
// is "not running".
func runState(ctx context.Context, m *Member) (running, paused bool) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := m.State(sctx)
	cancel()
	if err != nil {
		return false, false // not running (no container)
	}
	return st.Running, st.Paused
}

// Leader asks every running, non-paused member for its state and returns
// the leader once exactly one member says so on zkcheck.StablePolls
// consecutive polls. It retries until ctx ends.
func (e *Ensemble) Leader(ctx context.Context) (*Member, error) {
	return e.check().Leader(ctx)
}

// Followers waits for a stable leader (see Leader) and returns the members
// that then report "follower".
func (e *Ensemble) Followers(ctx context.Context) ([]*Member, error) {
	return e.check().Followers(ctx)
}

// WaitHealthy waits until every running member answers mntr, none is
// paused, exactly one is leader and all others follow (and the leader counts
// them as synced), the same on zkcheck.StablePolls consecutive polls. The
// error names the members that are not healthy. A member whose container is
// stopped (killed) does not count, as in zkensemble.
func (e *Ensemble) WaitHealthy(ctx context.Context) error {
	_, err := e.waitHealthy(ctx)
	return err
}

func (e *Ensemble) waitHealthy(ctx context.Context) ([]*Member, error) {
	return e.check().WaitHealthy(ctx)
}
