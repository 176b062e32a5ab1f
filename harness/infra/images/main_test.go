package images

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain builds the binaries the images hold before the tests start
// (once per machine, outside their timeout: a cold Consul build takes
// minutes); the image builds the tests make then take them from the cache.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		for _, build := range []func(context.Context, Options) (string, error){EtcdBinary, ConsulBinary, ChaoslabBinary} {
			if _, err := build(context.Background(), Options{Progress: os.Stderr}); err != nil {
				fmt.Fprintf(os.Stderr, "images: %v\n", err)
			}
		}
	}
	os.Exit(m.Run())
}
