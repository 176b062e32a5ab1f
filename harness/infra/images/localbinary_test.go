package images

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestLocalBinaryEnv(t *testing.T) {
	for _, tc := range []struct {
		env string
		get func(context.Context, Options) (string, error)
	}{
		{"CHAOSLAB_ETCD", EtcdBinary},
		{"CHAOSLAB_CONSUL", ConsulBinary},
	} {
		t.Run(tc.env, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "bin")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv(tc.env, bin)
			// Neither the source tree nor the cache is looked at.
			got, err := tc.get(context.Background(), Options{SourceDir: "/nonexistent", CacheDir: "/nonexistent"})
			if err != nil || got != bin {
				t.Fatalf("got %q, %v; want %q", got, err, bin)
			}
			t.Setenv(tc.env, bin+".missing")
			if _, err := tc.get(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), tc.env) {
				t.Fatalf("missing %s binary: err = %v, want one naming %s", tc.env, err, tc.env)
			}
		})
	}
}

// TestLocalBinaryReusesImageCache checks that EtcdBinary and ConsulBinary
// take the very file the image plans (what `chaoslab images build` builds)
// name in the cache, without building: a fake binary is put there.
func TestLocalBinaryReusesImageCache(t *testing.T) {
	src, err := FindSourceDir()
	if err != nil {
		t.Skipf("no source tree: %v", err)
	}
	for _, tc := range []struct {
		name string
		env  string
		plan func(*builder, context.Context) (*plan, error)
		get  func(context.Context, Options) (string, error)
	}{
		{"etcd", "CHAOSLAB_ETCD", (*builder).etcdPlan, EtcdBinary},
		{"consul", "CHAOSLAB_CONSUL", (*builder).consulPlan, ConsulBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.env, "")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cache := t.TempDir()
			b := &builder{log: slog.New(slog.DiscardHandler), progress: io.Discard, arch: runtime.GOARCH, cache: cache, src: src}
			p, err := tc.plan(b, ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			for _, f := range p.spec.Files {
				if filepath.Base(f.Dst) == tc.name {
					want = f.Src
				}
			}
			if want == "" || filepath.Dir(want) != cache {
				t.Fatalf("the %s image takes %q, not a file of the cache %s", tc.name, want, cache)
			}
			if err := os.WriteFile(want, []byte("fake"), 0o755); err != nil {
				t.Fatal(err)
			}
			got, err := tc.get(ctx, Options{SourceDir: src, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%sBinary = %q, want the image's %q", tc.name, got, want)
			}
		})
	}
}
