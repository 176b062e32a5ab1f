package progress

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The status line names the variant, its phase, the time elapsed of the
// expected total, the ETA, the leader and the declared figures; it says
// when the end is later than planned and never shows more elapsed than
// total.
func TestStatusLine(t *testing.T) {
	s := Status{Variant: "vulnerable", Index: 1, Of: 2, Phase: "warm-up", Elapsed: 42 * time.Second, Total: 190 * time.Second,
		Left: 148*time.Second + 400*time.Millisecond, Leader: "zk2",
		Figures: []slog.Attr{slog.Int("outstanding", 312), slog.String("clients", "12/12 alive"), slog.Int("OOM", 3)}}
	require.Equal(t, "variant 1/2 vulnerable · warm-up · 0:42 of ~3:10 · ETA 2:28 · leader zk2 · outstanding 312 · clients 12/12 alive · OOM 3", s.Line())
	s.Elapsed, s.Total, s.Late = 86*time.Second, 80*time.Second, 12*time.Second
	require.Contains(t, s.Line(), "1:26 of ~1:26 (0:12 later than planned)")
	s.Steering = "held by carol (facilitator)"
	require.Contains(t, s.Line(), "1:26 of ~1:26 (held by carol (facilitator))", "the facilitator's hold, not lateness")
	require.NotContains(t, s.Line(), "ETA", "the end is the facilitator's")
	require.Equal(t, "1:02:03", Clock(time.Hour+2*time.Minute+3*time.Second))
	require.Equal(t, "held at servers 4", Figure(slog.Int("held_at_servers", 4)))
}

// Off a terminal, a status is printed at most once per period, and every
// phase change is.
func TestPlainConsole(t *testing.T) {
	var b bytes.Buffer
	c := NewPlain(&b, time.Hour)
	st := Status{Variant: "v", Index: 1, Of: 1, Phase: "warm-up"}
	c.Phase(st)
	c.Update(st)
	c.Update(st)
	st.Phase = "observe"
	c.Phase(st)
	c.Println("warning: x")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3, b.String())
	require.Contains(t, lines[1], "observe")
	require.NotContains(t, b.String(), "\x1b", "no terminal codes off a terminal")
}

// The console shows warnings only; the log file gets every record, those
// logged before it was opened included; -v puts the detail on the console.
func TestLogs(t *testing.T) {
	var con bytes.Buffer
	l, err := NewLogs(&con, LogOptions{})
	require.NoError(t, err)
	l.Logger.Info("before the folder", "k", 1)
	path := filepath.Join(t.TempDir(), "chaoslab.log")
	require.NoError(t, l.Open(path))
	l.Logger.With("variant", "vulnerable").Debug("detail")
	l.Logger.Warn("port collision", "err", "address in use")
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "before the folder")
	require.Contains(t, string(b), "detail")
	require.Equal(t, "warning: port collision (err=\"address in use\")\n", con.String())

	con.Reset()
	l, err = NewLogs(&con, LogOptions{Verbose: true, Format: "json"})
	require.NoError(t, err)
	l.Logger.Debug("detail")
	require.Contains(t, con.String(), "detail")
	_, err = NewLogs(&con, LogOptions{Format: "xml"})
	require.Error(t, err)
}

// The log file stops at its cap and says so.
func TestLogCap(t *testing.T) {
	s := &sink{max: 100}
	path := filepath.Join(t.TempDir(), "x.log")
	require.NoError(t, s.open(path))
	for range 10 {
		_, _ = s.Write([]byte(strings.Repeat("x", 30) + "\n"))
	}
	require.NoError(t, s.close())
	b, _ := os.ReadFile(path)
	require.Less(t, len(b), 200)
	require.Contains(t, string(b), "left out")
}

// On a terminal the status line is redrawn in place, cut to the width,
// and a line printed goes above it.
func TestTerminalConsole(t *testing.T) {
	var b bytes.Buffer
	c := &Console{w: &b, fd: -1, tty: true, every: PlainEvery}
	st := Status{Variant: "vulnerable", Index: 1, Of: 2, Phase: "observe", Figures: []slog.Attr{slog.String("pad", strings.Repeat("x", 200))}}
	c.Update(st)
	require.True(t, strings.HasPrefix(b.String(), "\r\x1b[2Kvariant 1/2 vulnerable"))
	require.LessOrEqual(t, len([]rune(strings.TrimPrefix(b.String(), "\r\x1b[2K"))), 80)
	b.Reset()
	c.Println("warning: x")
	require.True(t, strings.HasPrefix(b.String(), "\r\x1b[2Kwarning: x\n\r\x1b[2Kvariant"), "%q", b.String())
	b.Reset()
	c.Clear()
	require.Equal(t, "\r\x1b[2K", b.String())
}
