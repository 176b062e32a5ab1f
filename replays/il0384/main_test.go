// Package il0384_test replays IL-0384 (a capacity addition takes a thread-per-peer fleet past its thread limit)
// on real servers, through the runner, and checks that it reproduces.
package il0384_test

import (
	"testing"

	"github.com/chaoslab/chaoslab/replays/replaytest"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout).
func TestMain(m *testing.M) { replaytest.Main(m) }
