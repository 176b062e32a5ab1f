package progress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
)

// MaxLogBytes caps a run's log file; what comes after is left out, and
// the file says so.
const MaxLogBytes = 2 << 20

// LogOptions say where a run's log goes.
type LogOptions struct {
	// Verbose puts every record on the console too.
	Verbose bool
	// Format of the log file: text (default) or json.
	Format string
}

// Logs is a run's logging: on the console the warnings (every record
// with Verbose), in the log file every record, from the start (records
// are held until Open names the file).
type Logs struct {
	Logger *slog.Logger
	file   *sink
}

// NewLogs logs to console and, once opened, to a file.
func NewLogs(console io.Writer, o LogOptions) (*Logs, error) {
	s := &sink{max: MaxLogBytes}
	ho := &slog.HandlerOptions{Level: slog.LevelDebug}
	var fh slog.Handler
	switch o.Format {
	case "", "text":
		fh = slog.NewTextHandler(s, ho)
	case "json":
		fh = slog.NewJSONHandler(s, ho)
	default:
		return nil, fmt.Errorf("choose log format: %q is not text or json", o.Format)
	}
	var ch slog.Handler = &lineHandler{w: console, level: slog.LevelWarn}
	if o.Verbose {
		ch = slog.NewTextHandler(console, ho)
	}
	return &Logs{Logger: slog.New(tee{ch, fh}), file: s}, nil
}

// Open writes the log to path from now on, with what was logged before;
// a file opened before is closed.
func (l *Logs) Open(path string) error { return l.file.open(path) }

// Close closes the log file; records are held again until the next Open.
func (l *Logs) Close() error { return l.file.close() }

// sink is the log file: held in memory until opened, capped.
type sink struct {
	mu      sync.Mutex
	f       *os.File
	held    bytes.Buffer
	n, max  int64
	dropped bool
}

func (s *sink) open(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = s.f.Close()
	}
	s.f, s.n, s.dropped = f, 0, false
	held := s.held.Bytes()
	s.held = bytes.Buffer{}
	_, err = s.writeLocked(held)
	return err
}

func (s *sink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		if int64(s.held.Len()+len(p)) <= s.max {
			s.held.Write(p)
		}
		return len(p), nil
	}
	return s.writeLocked(p)
}

func (s *sink) writeLocked(p []byte) (int, error) {
	if s.dropped {
		return len(p), nil
	}
	if s.n+int64(len(p)) > s.max {
		s.dropped = true
		fmt.Fprintf(s.f, "... the rest of the log is left out (it reached %d MiB)\n", s.max>>20)
		return len(p), nil
	}
	n, err := s.f.Write(p)
	s.n += int64(n)
	return len(p), err
}

// tee sends each record to every handler that takes its level.
type tee []slog.Handler

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t tee) Handle(ctx context.Context, r slog.Record) error {
	var err error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			if e := h.Handle(ctx, r.Clone()); e != nil && err == nil {
				err = e
			}
		}
	}
	return err
}

func (t tee) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t tee) WithGroup(name string) slog.Handler {
	out := make(tee, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

// lineHandler writes a record as one short line for a person: "warning:
// message (key=value, ...)", without time.
type lineHandler struct {
	w      io.Writer
	level  slog.Level
	attrs  []slog.Attr
	prefix string
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var kv []string
	add := func(prefix string, a slog.Attr) {
		if a.Key != "" {
			kv = append(kv, prefix+a.Key+"="+quote(a.Value.Resolve().String()))
		}
	}
	for _, a := range h.attrs {
		add("", a)
	}
	r.Attrs(func(a slog.Attr) bool { add(h.prefix, a); return true })
	line := levelWord(r.Level) + ": " + r.Message
	if len(kv) > 0 {
		line += " (" + strings.Join(kv, ", ") + ")"
	}
	_, err := io.WriteString(h.w, line+"\n")
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
	}
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.prefix += name + "."
	return &c
}

func levelWord(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}

func quote(s string) string {
	if strings.ContainsAny(s, " ,()=\"") {
		return strconv.Quote(s)
	}
	return s
}
