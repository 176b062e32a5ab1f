package dockerzk

// The four-letter-word client is in harness/zkcheck, shared with
// harness/zkensemble.

import (
	"strings"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// DefaultProbeTimeout bounds a four-letter-word exchange when the context
// has no deadline (zkcheck.DefaultProbeTimeout).
const DefaultProbeTimeout = zkcheck.DefaultProbeTimeout

// ErrNotServing is returned by Mntr when the server answers but is not
// serving requests (it is looking for a leader or syncing). It is
// zkcheck.ErrNotServing.
var ErrNotServing = zkcheck.ErrNotServing

// Server states as reported in mntr's zk_server_state.
const (
	StateLeader     = zkcheck.StateLeader
	StateFollower   = zkcheck.StateFollower
	StateObserver   = zkcheck.StateObserver
	StateStandalone = zkcheck.StateStandalone
)

// versionOf returns zk_version without the build date.
func versionOf(kv map[string]string) string {
	v, _, _ := strings.Cut(kv["zk_version"], ", built on")
	return strings.TrimSpace(v)
}
