package scenarios_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/chaoslab/chaoslab/scenarios"
)

// FuzzLoad: the loader never panics, whatever the input; what it refuses
// it refuses with file:line problems, and what it accepts can be run (the
// settings of every variant decode, every fault builds).
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"*.yaml", "testdata/bad/*.yaml", "testdata/good/*.yaml", "../examples/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenarios.Parse("fuzz.yaml", data)
		if err != nil {
			var es scenarios.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("want scenarios.Errors, got %T: %v", err, err)
			}
			for _, e := range es {
				if e.File != "fuzz.yaml" || e.Msg == "" {
					t.Fatalf("a problem without its file or message: %#v", e)
				}
			}
			return
		}
		if s.RunLength() <= 0 {
			t.Fatalf("accepted a run of %s", s.RunLength())
		}
		for _, name := range s.VariantNames() {
			if _, err := s.WorkloadFor(name); err != nil {
				t.Fatalf("accepted, but variant %s's workload: %v", name, err)
			}
			if _, err := s.TopologyFor(name); err != nil {
				t.Fatalf("accepted, but variant %s's topology: %v", name, err)
			}
			steps, err := s.FaultsFor(name)
			if err != nil {
				t.Fatalf("accepted, but variant %s's faults: %v", name, err)
			}
			for i, step := range steps {
				if _, err := step.NewFault(); err != nil {
					t.Fatalf("accepted, but variant %s's fault %d: %v", name, i, err)
				}
			}
		}
	})
}
