package images

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Two builds of the same binary at once build it once: the second waits
// for the lock and takes the first's binary from the cache.
func TestConcurrentBuildsBuildOnce(t *testing.T) {
	mod := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var progress syncBuffer
	b := &builder{log: slog.New(slog.DiscardHandler), progress: &progress, arch: runtime.GOARCH, cache: t.TempDir()}
	tgt := goTarget{Name: "hello", Version: "v1", ModDir: mod, Package: "."}
	var wg sync.WaitGroup
	paths, cached, errs := make([]string, 3), make([]bool, 3), make([]error, 3)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], cached[i], errs[i] = b.buildGo(context.Background(), "hello", tgt, "0123456789abcdef")
		}()
	}
	wg.Wait()
	built := 0
	for i := range paths {
		if errs[i] != nil {
			t.Fatalf("build %d: %v", i, errs[i])
		}
		if paths[i] != paths[0] {
			t.Fatalf("build %d: %s, want %s", i, paths[i], paths[0])
		}
		if !cached[i] {
			built++
		}
	}
	if built != 1 || strings.Count(progress.String(), "building hello") != 1 {
		t.Fatalf("built %d times, want once; progress:\n%s", built, progress.String())
	}
	if fi, err := os.Stat(paths[0]); err != nil || fi.Size() == 0 {
		t.Fatalf("binary %s: %v", paths[0], err)
	}
}

// A lock held elsewhere is waited for until the context ends.
func TestLockFileWaitsForItsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".x.lock")
	release, err := lockFile(context.Background(), path, io.Discard, "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path, io.Discard, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v, want the deadline", err)
	}
	release()
	again, err := lockFile(context.Background(), path, io.Discard, "x")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}
