// Package il0587_test replays IL-0587 (a ZooKeeper leader stalls and every TreeCache client re-reads its tree)
// on real servers, through the runner, and checks that it reproduces.
package il0587_test

import (
	"testing"

	"github.com/chaoslab/chaoslab/replays/replaytest"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout).
func TestMain(m *testing.M) { replaytest.Main(m) }
