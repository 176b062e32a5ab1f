// Package il0277_test replays IL-0277 (a rolling replacement of ZooKeeper members loses quorum)
// on real servers, through the runner, and checks that it reproduces.
package il0277_test

import (
	"testing"

	"github.com/chaoslab/chaoslab/replays/replaytest"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout).
func TestMain(m *testing.M) { replaytest.Main(m) }
