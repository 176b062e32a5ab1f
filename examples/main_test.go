package examples_test

import (
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/labtest"
	"github.com/chaoslab/chaoslab/harness/tier"
)

// TestMain builds what the integration tests run before they start (once
// per machine, outside their timeout). The integration tests take about
// 8.5 min (seven programs of 52-105 s each), more than tier's 5.
func TestMain(m *testing.M) {
	tier.Needs(10 * time.Minute)
	labtest.Main(m, labtest.Chaoslab, labtest.Etcd, labtest.Consul)
}
