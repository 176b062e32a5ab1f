// Package il0206_test replays IL-0206 (OOM-killed Consul agents send every query to the primary database)
// on real servers, through the runner, and checks that it reproduces.
package il0206_test

import (
	"testing"

	"github.com/chaoslab/chaoslab/replays/replaytest"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout).
func TestMain(m *testing.M) { replaytest.Main(m) }
