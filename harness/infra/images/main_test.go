package images

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/chaoslab/chaoslab/harness/tier"
)

// TestMain builds the binaries the images hold before the tests start
// (once per machine, outside their timeout: a cold Consul build takes
// minutes); the image builds the tests make then take them from the cache.
func TestMain(m *testing.M) {
	// The binaries, built before the integration tests (outside their
	// timeout); a unit tier run does not wait for them (tier.Main).
	tier.Main(m, func() {
		for _, build := range []func(context.Context, Options) (string, error){EtcdBinary, ConsulBinary, ChaoslabBinary} {
			if _, err := build(context.Background(), Options{Progress: os.Stderr}); err != nil {
				fmt.Fprintf(os.Stderr, "images: %v\n", err)
			}
		}
	})
}
