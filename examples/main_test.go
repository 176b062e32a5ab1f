package examples_test

import (
	"testing"

	"github.com/chaoslab/chaoslab/harness/labtest"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout).
func TestMain(m *testing.M) { labtest.Main(m, labtest.Chaoslab, labtest.Etcd, labtest.Consul) }
