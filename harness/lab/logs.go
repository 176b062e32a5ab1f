package lab

import (
	"io"
	"os"
	"path/filepath"
	"sync"
)

// LogFiles opens a log file per program under a folder and closes them
// all at once (a cluster of local processes writing a log per member).
type LogFiles struct {
	Dir string

	mu    sync.Mutex
	files []*os.File
}

// Writer is the log of one program, Dir/name.log (io.Discard when it
// cannot be created: a log is never worth failing a run for).
func (l *LogFiles) Writer(name string) io.Writer {
	f, err := os.Create(filepath.Join(l.Dir, name+".log"))
	if err != nil {
		return io.Discard
	}
	l.mu.Lock()
	l.files = append(l.files, f)
	l.mu.Unlock()
	return f
}

// Close closes every log opened.
func (l *LogFiles) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		f.Close()
	}
	l.files = nil
}
