// Package awsebs2011_test replays AWS-EBS-2011 (a re-mirroring storm after a network change)
// on real servers, through the runner, and checks that it reproduces.
package awsebs2011_test

import (
	"testing"

	"github.com/chaoslab/chaoslab/replays/replaytest"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout).
func TestMain(m *testing.M) { replaytest.Main(m) }
