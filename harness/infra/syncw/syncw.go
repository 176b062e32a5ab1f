// Package syncw holds a writer that several goroutines share: a
// program's output streams copied into one log.
package syncw

import (
	"io"
	"sync"
)

// Writer passes each Write to W under Mu: share Mu to guard W together
// with other state, or take New for a lock of its own.
type Writer struct {
	Mu *sync.Mutex
	W  io.Writer
}

// New is a Writer of w with a lock of its own.
func New(w io.Writer) *Writer { return &Writer{Mu: &sync.Mutex{}, W: w} }

func (l *Writer) Write(p []byte) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.W.Write(p)
}
