package kubernetes

import (
	"testing"

	"github.com/chaoslab/chaoslab/harness/tier"
)

// TestMain: the integration tests of packages tested side by side take
// turns (tier.Main).
func TestMain(m *testing.M) { tier.Main(m, nil) }
