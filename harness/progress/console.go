package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// PlainEvery is how often a console that is not a terminal prints the
// status between phase changes.
const PlainEvery = 20 * time.Second

// Console shows statuses and lines on a writer (stderr): on a terminal
// one status line redrawn in place below the lines printed; elsewhere (a
// file, a pipe, CI set) plain lines, a status at most every PlainEvery
// and one per phase change. It is safe for concurrent use, and is an
// io.Writer for a log handler, whose lines go above the status line.
type Console struct {
	mu    sync.Mutex
	w     io.Writer
	fd    int
	tty   bool
	every time.Duration
	line  string // the status line drawn (terminal)
	last  time.Time
}

// NewConsole shows on f, in place when f is a terminal and CI is not set.
func NewConsole(f *os.File) *Console {
	c := &Console{w: f, fd: int(f.Fd()), every: PlainEvery}
	c.tty = isTerminal(c.fd) && os.Getenv("CI") == ""
	return c
}

// NewPlain shows on w as on a file: plain lines, a status every every.
func NewPlain(w io.Writer, every time.Duration) *Console {
	return &Console{w: w, fd: -1, every: every}
}

// Terminal says whether the status line is redrawn in place.
func (c *Console) Terminal() bool { return c.tty }

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	return err == nil
}

// Phase prints a variant entering a phase as a line of its own: the
// whole status where it is not redrawn, its head on a terminal (the
// status line below says the rest).
func (c *Console) Phase(s Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
	if !c.tty {
		fmt.Fprintln(c.w, s.Line())
		return
	}
	c.line = s.Line()
	c.printLocked(s.Head() + "\n")
}

// Update shows a status: redrawn on a terminal, printed elsewhere when
// the last line is older than the console's period.
func (c *Console) Update(s Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty {
		c.line = s.Line()
		c.drawLocked()
		return
	}
	if time.Since(c.last) >= c.every {
		c.last = time.Now()
		fmt.Fprintln(c.w, s.Line())
	}
}

// Println prints a line above the status line.
func (c *Console) Println(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.printLocked(strings.TrimRight(line, "\n") + "\n")
}

// Write prints p (whole lines, from a log handler) above the status line.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.printLocked(string(p))
	return len(p), nil
}

// Clear removes the status line (the run is over).
func (c *Console) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty && c.line != "" {
		fmt.Fprint(c.w, "\r\x1b[2K")
	}
	c.line = ""
}

// printLocked prints text, clearing the status line first and drawing it
// again below.
func (c *Console) printLocked(text string) {
	if c.tty && c.line != "" {
		fmt.Fprint(c.w, "\r\x1b[2K")
	}
	fmt.Fprint(c.w, text)
	c.drawLocked()
}

func (c *Console) drawLocked() {
	if !c.tty || c.line == "" {
		return
	}
	fmt.Fprint(c.w, "\r\x1b[2K"+fit(c.line, c.width()))
}

// width is the terminal's width in columns (80 when unknown).
func (c *Console) width() int {
	if ws, err := unix.IoctlGetWinsize(c.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return int(ws.Col)
	}
	return 80
}

// fit cuts line to fewer than width columns, with an ellipsis.
func fit(line string, width int) string {
	r := []rune(line)
	if len(r) < width {
		return line
	}
	return string(r[:max(width-2, 1)]) + "…"
}
