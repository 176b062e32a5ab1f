package local

import "github.com/chaoslab/chaoslab/harness/lab"

// WatchStarts has f told each program started here from now on.
func (s *Site) WatchStarts(f func(lab.Program, lab.Proc)) {
	s.mu.Lock()
	s.onStart = f
	s.mu.Unlock()
}
