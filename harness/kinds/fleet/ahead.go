package fleet

import (
	"github.com/chaoslab/chaoslab/harness/lab"
)

// On a site where creating a program's sandbox is slow (containers: the
// engine creates about three a second here), the all-at-once restart
// would be paced by the engine after its first round: every server the
// health check removes or the thread limit kills waits for a container
// of its own, and the fleet is restarted slowly by accident (measured:
// the fast restart then recovered after 54 s, as the slow one does). So
// the restart creates incarnations of every server ahead, one to start
// together and twinsKept kept for the server's next exits, and while the
// restart lasts a server started from a twin has a new one made.
// A server that exits then starts again as fast as a process would.
// Twins are made only before the restart and after an exit: making them
// for every server at the restart's start took the CPU from the fleet's
// own start (the pooled fleet missed its health checks and never
// recovered).

// aheadAtOnce bounds the sandboxes created ahead at once.
const aheadAtOnce = 4

// twinsKept is how many incarnations a server keeps ahead: with one, a
// fleet whose servers all died twice in a row was started again at the
// engine's pace (the fast restart recovered after 83 s against the slow
// one's 44 s, seed 1).
const twinsKept = 2

// keepAhead turns the keeping on for the rest of the run.
func (f *Fleet) keepAhead(pre lab.Preparer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ahead == nil {
		f.ahead, f.aheadSem = pre, make(chan struct{}, aheadAtOnce)
	}
}

// prepareNext creates a next incarnation of a server that runs, unless
// the keeping is off, it keeps twinsKept or one is being made, or s left
// the fleet.
func (f *Fleet) prepareNext(s *Server) {
	f.mu.Lock()
	pre, sem := f.ahead, f.aheadSem
	f.mu.Unlock()
	if pre == nil {
		return
	}
	s.mu.Lock()
	if len(s.twins) >= twinsKept || s.preparing || s.retired {
		s.mu.Unlock()
		return
	}
	s.preparing = true
	s.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		var l *launch
		select {
		case sem <- struct{}{}:
			l = f.create(f.ctx, pre, s, prepTwin)
			<-sem
		case <-f.ctx.Done():
		}
		f.keepNext(s, l)
	}()
}

// keepNext keeps a next incarnation made ahead, or launches it at once
// when s exited while it was being made.
func (f *Fleet) keepNext(s *Server, l *launch) {
	f.mu.Lock()
	closed := f.closed
	s.mu.Lock()
	s.preparing = false
	want := s.wantStart
	s.wantStart = false
	switch {
	case l == nil:
	case closed || s.retired:
		s.mu.Unlock()
		f.mu.Unlock()
		f.discard(l)
		return
	case !want:
		s.twins = append(s.twins, l)
	}
	s.mu.Unlock()
	f.mu.Unlock()
	switch {
	case want && l != nil:
		f.launch(l)
		f.prepareNext(s)
	case want:
		f.start(s)
	case l != nil:
		f.prepareNext(s) // the next twin, up to twinsKept
	}
}

// keepTwin keeps a twin made at the restart's start (nil: none).
func (f *Fleet) keepTwin(s *Server, l *launch) {
	if l == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.mu.Lock()
	keep := !f.closed && !s.retired && len(s.twins) < twinsKept
	if keep {
		s.twins = append(s.twins, l)
	}
	s.mu.Unlock()
	if !keep {
		f.discard(l)
	}
}

// popTwin takes the first incarnation made ahead of s (nil: none).
func (s *Server) popTwin() *launch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.twins) == 0 {
		return nil
	}
	l := s.twins[0]
	s.twins = s.twins[1:]
	return l
}

// takeNext is the next incarnation made ahead of s, if any; when one is
// being made, s is marked to start as soon as it is (nil, true).
func (s *Server) takeNext() (l *launch, wait bool) {
	if l := s.popTwin(); l != nil {
		return l, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.preparing {
		s.wantStart = true
		return nil, true
	}
	return nil, false
}

// discard gives back an incarnation made ahead that will not run (the
// site stops its sandbox with the run's).
func (f *Fleet) discard(l *launch) {
	l.logf.Close()
	f.unprepare(l)
}

// discardAll gives back every incarnation made ahead; call with f.mu
// held and f.closed set.
func (f *Fleet) discardAll() {
	for _, s := range f.servers {
		s.mu.Lock()
		ls := s.twins
		s.twins = nil
		s.mu.Unlock()
		for _, l := range ls {
			f.discard(l)
		}
	}
}

// Ahead is how many incarnations made ahead the fleet's servers keep.
func (f *Fleet) Ahead() int {
	n := 0
	for _, s := range f.Servers() {
		s.mu.Lock()
		n += len(s.twins)
		s.mu.Unlock()
	}
	return n
}
