package zookeeper

import (
	"context"
	"fmt"
	"strings"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper/zkcheck"
)

// gateCheck is one probe of a named gate (faults.GateShallow, GateDeep)
// on member m of an ensemble of members: nil when m passes.
func gateCheck(ctx context.Context, m *member, members []*member, gate string) error {
	switch gate {
	case faults.GateShallow:
		return shallowGate(ctx, m)
	case faults.GateDeep:
		return deepGate(ctx, m, members)
	}
	return fmt.Errorf("check gate: unknown gate %q", gate)
}

// shallowGate: the process is up and answers ruok with imok (what host
// and service metrics show; a server still syncing answers it too).
func shallowGate(ctx context.Context, m *member) error {
	if !m.Running() || m.Paused() {
		return fmt.Errorf("%s is not running", m.Name())
	}
	out, err := m.FourLetter(ctx, "ruok")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "imok" {
		return fmt.Errorf("%s answers ruok with %q", m.Name(), zkcheck.Truncate(out, 80))
	}
	return nil
}

// deepGate: m follows or observes, its zxid has caught up with the
// leader's (read first), and the leader counts as many synced followers
// (observers) as members now report following (observing).
func deepGate(ctx context.Context, m *member, members []*member) error {
	if !m.Running() || m.Paused() {
		return fmt.Errorf("%s is not running", m.Name())
	}
	kv, err := m.Mntr(ctx)
	if err != nil {
		return err
	}
	state := kv["zk_server_state"]
	if state != zkcheck.StateFollower && state != zkcheck.StateObserver {
		return fmt.Errorf("%s is %s, not following or observing", m.Name(), state)
	}
	leader, leaderKV, same, err := pollLeader(ctx, members, state)
	if err != nil {
		return err
	}
	lz, err := zxid(ctx, leader)
	if err != nil {
		return err
	}
	mz, err := zxid(ctx, m)
	if err != nil {
		return err
	}
	if mz < lz {
		return fmt.Errorf("%s at zxid 0x%x, behind leader %s at 0x%x", m.Name(), mz, leader.Name(), lz)
	}
	key := "zk_synced_followers"
	if state == zkcheck.StateObserver {
		key = "zk_synced_observers"
	}
	synced, ok := zkcheck.SyncedCount(leaderKV, key)
	if !ok {
		return fmt.Errorf("leader %s does not report %s", leader.Name(), key)
	}
	if synced < same {
		return fmt.Errorf("leader %s has %s %d, %d members are %ss", leader.Name(), key, synced, same, state)
	}
	return nil
}

// pollLeader asks every running member for mntr once: the one leader and
// its answer, and how many members are in state.
func pollLeader(ctx context.Context, members []*member, state string) (*member, map[string]string, int, error) {
	var leader *member
	var leaderKV map[string]string
	leaders, same := 0, 0
	for _, o := range members {
		if !o.Running() || o.Paused() {
			continue
		}
		kv, err := o.Mntr(ctx)
		if err != nil {
			continue
		}
		switch kv["zk_server_state"] {
		case zkcheck.StateLeader:
			leader, leaderKV = o, kv
			leaders++
		case state:
			same++
		}
	}
	if leaders != 1 {
		return nil, nil, 0, fmt.Errorf("%d members answer as leader", leaders)
	}
	return leader, leaderKV, same, nil
}

func zxid(ctx context.Context, m *member) (uint64, error) { return m.Zxid(ctx) }
