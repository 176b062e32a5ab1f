// Package servers holds what every placement's servers share (the layout
// and program a server was started with, its files, its limits, the wait
// until it serves) and what every system's servers share (Member: a
// lab.Server as a cluster member and fault target, StartAll: lay out,
// render and start a set of servers). A placement implements lab.Server
// on top of Base; a system describes its servers and starts them with
// StartAll.
package servers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// DefaultReadyTimeout bounds the wait until a server serves.
const DefaultReadyTimeout = 2 * time.Minute

// Base is the part of a server every placement keeps the same way: its
// layout, its program, its files as they will be written next, its
// limits.
type Base struct {
	layout lab.ServerLayout
	prog   lab.ServerProgram

	mu     sync.Mutex
	files  map[string]string
	limits lab.Limits
}

// NewBase keeps a server's layout and program.
func NewBase(l lab.ServerLayout, p lab.ServerProgram) *Base {
	files := map[string]string{}
	for k, v := range p.Files {
		files[k] = v
	}
	return &Base{layout: l, prog: p, files: files, limits: p.Limits}
}

func (b *Base) Name() string               { return b.layout.Name }
func (b *Base) Layout() lab.ServerLayout   { return b.layout }
func (b *Base) Program() lab.ServerProgram { return b.prog }
func (b *Base) SetCPUCores(cores float64)  { b.mu.Lock(); b.limits.CPUCores = cores; b.mu.Unlock() }
func (b *Base) SetMemoryMB(mb int)         { b.mu.Lock(); b.limits.MemoryMB = mb; b.mu.Unlock() }
func (b *Base) Limits() lab.Limits         { b.mu.Lock(); defer b.mu.Unlock(); return b.limits }
func (b *Base) LogPath() string            { return b.layout.Log }
func (b *Base) File(path string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.files[path]
	return v, ok
}

// WriteFile changes one of the server's files for its next start.
func (b *Base) WriteFile(path, content string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.files[path]; !ok {
		return fmt.Errorf("write %s of %s: not one of its files", path, b.layout.Name)
	}
	b.files[path] = content
	return nil
}

// Files are the server's files as they are to be written now.
func (b *Base) Files() map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]string, len(b.files))
	for k, v := range b.files {
		out[k] = v
	}
	return out
}

// RemoveData empties the server's data folder on this machine.
func (b *Base) RemoveData() error {
	d := b.layout.HostDataDir
	if d == "" {
		return nil
	}
	if err := os.RemoveAll(d); err != nil {
		return fmt.Errorf("remove data of %s: %w", b.layout.Name, err)
	}
	return nil
}

// WaitReady waits until the program's Ready probe passes on s (Up, when
// up is set: a replacement), its process p ends (an error with the tail
// of its log from logOffset), or the program's ready timeout.
func (b *Base) WaitReady(ctx context.Context, s lab.Server, p lab.Proc, logOffset int64, up bool) error {
	probe := b.prog.Ready
	if up {
		probe = b.prog.Up
	}
	if probe == nil {
		return nil
	}
	timeout := b.prog.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		select {
		case <-p.Done():
			return fmt.Errorf("start %s: %s before it served\n%s", b.layout.Name, p.Exit().How, b.LogTail(logOffset, 30))
		default:
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last = probe(pctx, s)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("start %s: not serving after %s: %w (last: %v)\n%s", b.layout.Name, timeout, ctx.Err(), last, b.LogTail(logOffset, 30))
		case <-p.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// LogTail is the last n lines of the server's log from offset, indented,
// for error messages.
func (b *Base) LogTail(offset int64, n int) string {
	f, err := os.Open(b.layout.Log)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size()-offset > 64<<10 {
		offset = st.Size() - 64<<10
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "  (" + err.Error() + ")"
	}
	data, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + b.layout.Name + " log tail (" + b.layout.Log + "):\n    " + strings.Join(lines, "\n    ")
}

// LineWriter is a program's Stdout that appends each line to w.
func LineWriter(w io.Writer) func([]byte) {
	var mu sync.Mutex
	return func(line []byte) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(append(bytes.Clone(line), '\n'))
	}
}

// LogContains says whether the server's log holds s after offset.
func (b *Base) LogContains(offset int64, s string) bool {
	f, err := os.Open(b.layout.Log)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

// ErrNotRunning is returned by a fault on a server that does not run.
var ErrNotRunning = errors.New("not running")
