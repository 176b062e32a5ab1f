package labtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/tier"
)

// A Binary is a program the integration tests run, built from source
// once per machine and kept in the cache `chaoslab images build` fills.
type Binary struct {
	Name  string
	build func(context.Context, images.Options) (string, error)
}

// The binaries a test package can ask Main for.
var (
	Chaoslab = Binary{"chaoslab", images.ChaoslabBinary}
	Etcd     = Binary{"etcd", images.EtcdBinary}
	Consul   = Binary{"consul", images.ConsulBinary}
)

// Main builds the binaries a package's integration tests need (each once
// per machine: builds of the same binary by other packages or processes
// take turns under a lock and find it in the cache), then runs the
// tests. It builds before m.Run, outside the tests' -timeout, so no test
// fails because a cold Consul build took minutes; with -short nothing is
// built. The integration tests of packages tested side by side take
// turns (tier.Main). A build that fails is reported and the tests run: those that
// need the binary fail with the same error.
//
//	func TestMain(m *testing.M) { labtest.Main(m, labtest.Chaoslab, labtest.Etcd) }
func Main(m *testing.M, need ...Binary) {
	tier.Main(m, func() {
		for _, b := range need {
			start := time.Now()
			if _, err := b.path(); err != nil {
				fmt.Fprintf(os.Stderr, "labtest: build %s: %v\n", b.Name, err)
			} else if d := time.Since(start); d > 5*time.Second {
				fmt.Fprintf(os.Stderr, "labtest: built %s in %s (before the tests, outside their timeout)\n", b.Name, d.Round(time.Second))
			}
		}
	})
}

var built sync.Map // Binary.Name -> result

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// path is the binary, built once per test binary (and per machine).
func (b Binary) path() (string, error) {
	v, _ := built.LoadOrStore(b.Name, &buildResult{})
	r := v.(*buildResult)
	r.once.Do(func() {
		r.path, r.err = b.build(context.Background(), images.Options{Progress: os.Stderr})
	})
	return r.path, r.err
}

// ChaoslabBinary is the chaoslab command the built-in clients' agents run
// as: the static build the chaoslab image holds, from the cache when the
// source tree has not changed since.
func ChaoslabBinary() (string, error) { return Chaoslab.path() }
