package fleet

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// launch is one incarnation of a server on its way to running: its log
// open, its program built and, on a site where creating it is slow, its
// sandbox already created (pending).
type launch struct {
	s       *Server
	inc     int
	logf    *os.File
	tail    *tailWriter
	prog    lab.Program
	pending lab.Pending
	twin    bool // made by prepTwin
}

// start runs a new incarnation of s through the launcher; it returns once
// the server runs (or failed to start).
func (f *Fleet) start(s *Server) {
	s.mu.Lock()
	starting := s.starting
	s.mu.Unlock()
	if starting {
		return // an incarnation is on its way (the restart's, made ahead)
	}
	l, wait := s.takeNext()
	if wait {
		return // keepNext starts it
	}
	if l == nil {
		l = f.prepare(s, prepNow)
	}
	if l != nil {
		f.launch(l)
		f.prepareNext(s)
	}
}

// prep says what a prepared incarnation is for.
type prep int

const (
	// prepNow: to start now; refused while s runs or starts.
	prepNow prep = iota
	// prepAhead: to replace s at the restart, readied while it runs;
	// refused while s starts.
	prepAhead
	// prepTwin: s's next incarnation kept ahead for its next exit
	// (ahead.go), readied whatever s is doing.
	prepTwin
)

// prepare readies a new incarnation of s; nil when the fleet is closing,
// s is retired, or mode refuses. A launch it returns must be passed to
// launch or unprepare.
func (f *Fleet) prepare(s *Server, mode prep) *launch {
	f.mu.Lock()
	if f.closed || f.ctx.Err() != nil {
		f.mu.Unlock()
		return nil
	}
	f.launching.Add(1)
	f.mu.Unlock()
	s.mu.Lock()
	if s.retired || (mode == prepNow && s.proc != nil) || (mode != prepTwin && s.starting) {
		s.mu.Unlock()
		f.launching.Done()
		return nil
	}
	if mode != prepTwin {
		s.starting = true
	}
	l := &launch{s: s, inc: s.inc, twin: mode == prepTwin}
	s.inc++
	s.mu.Unlock()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.event("note", s.ID, "could not open its log: "+err.Error())
		f.unprepare(l)
		return nil
	}
	l.logf, l.tail = logf, &tailWriter{w: logf, max: 8 << 10}
	l.prog = f.program(s, l.inc, l.tail)
	return l
}

// unprepare takes back a prepared start that will not run.
func (f *Fleet) unprepare(l *launch) {
	if !l.twin {
		l.s.mu.Lock()
		l.s.starting = false
		l.s.mu.Unlock()
	}
	f.launching.Done()
}

// launch starts a prepared incarnation and watches it until it exits.
func (f *Fleet) launch(l *launch) {
	s := l.s
	defer f.launching.Done()
	s.mu.Lock()
	s.removed = false
	s.fails = 0
	s.readyAt = time.Time{}
	s.stopping = ""
	s.port = ""
	s.mu.Unlock()
	fmt.Fprintf(l.logf, "=== %s start %d\n", time.Now().Format(time.RFC3339Nano), l.inc)
	var p lab.Proc
	var err error
	if l.pending != nil {
		p, err = l.pending.Start(f.ctx)
	} else {
		p, err = f.cfg.Env.Site.Start(f.ctx, l.prog)
	}
	if err != nil {
		l.logf.Close()
		s.mu.Lock()
		s.starting = false
		s.mu.Unlock()
		if f.ctx.Err() == nil { // not the end of the run
			f.event("note", s.ID, "could not start: "+err.Error())
		}
		return
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.proc, s.started, s.done, s.running = p, time.Now(), done, l.inc
	s.starting = false
	s.starts++
	s.desc = p.Desc()
	s.startTimes = append(s.startTimes, f.cfg.Env.Now())
	s.mu.Unlock()
	what := "started"
	if l.inc > 0 {
		what = "restarted"
	}
	f.cfg.Env.Record("server-start", s.ID, fmt.Sprintf("%s (incarnation %d, %s, thread limit %d)", what, l.inc, p.Desc(), f.cfg.ThreadLimit))
	f.wg.Add(1)
	go func() { defer f.wg.Done(); f.watchExit(l, p, done) }()
}

// watchExit records how an incarnation ended and, while the operator's
// restart lasts, queues the server to start again.
func (f *Fleet) watchExit(l *launch, p lab.Proc, done chan struct{}) {
	s := l.s
	<-p.Done()
	pe := p.Exit()
	refused := p.Stats().PidsRefused
	s.mu.Lock()
	why := s.stopping
	threads := 0
	if n := len(s.samples); n > 0 {
		threads = s.samples[n-1].Threads
	}
	s.mu.Unlock()
	e := describeExit(pe, l.tail.String(), why)
	if l.tail.marked() {
		e.ThreadLimit = true
		if !strings.HasPrefix(e.How, "the Go runtime") {
			e.How = "the Go runtime aborted: " + l.tail.mark
		}
	}
	e.T, e.Server, e.PidsLimitHit, e.Threads = f.cfg.Env.Now(), s.ID, refused, threads
	if err := p.Release(); err != nil {
		f.log.Warn("release server", "server", s.ID, "err", err)
	}
	l.logf.Close()
	s.mu.Lock()
	s.exits = append(s.exits, e)
	s.proc = nil
	s.mu.Unlock()
	close(done)
	if why == "" || e.ThreadLimit {
		detail := e.How
		if e.PidsLimitHit > 0 {
			detail += fmt.Sprintf("; the kernel refused %d thread creations at pids.max %d", e.PidsLimitHit, f.cfg.ThreadLimit)
		}
		kind := "server-exit"
		if e.ThreadLimit {
			kind = "thread-limit"
		}
		f.event(kind, s.ID, detail)
	}
	f.mu.Lock()
	restarting := f.restarting
	f.mu.Unlock()
	s.mu.Lock()
	retired := s.retired
	s.mu.Unlock()
	if restarting && !retired && f.ctx.Err() == nil {
		select {
		case f.restart <- s:
		case <-f.ctx.Done():
		}
	}
}

// restartTogether is the all-at-once restart on a site where creating a
// program's sandbox is slow next to starting it (containers, about one a
// second here): the next incarnation of every server is created first,
// then every server is stopped and all start together, so that the
// restart is as sudden as on processes.
func (f *Fleet) restartTogether(ctx context.Context, pre lab.Preparer, servers []*Server) error {
	began := time.Now()
	ls := make([]*launch, len(servers))
	sem := make(chan struct{}, 4)
	wg := make(chan struct{}, len(servers))
	for i, s := range servers {
		go func() {
			defer func() { wg <- struct{}{} }()
			sem <- struct{}{}
			defer func() { <-sem }()
			ls[i] = f.prepareAhead(ctx, pre, s)
			for range twinsKept {
				if ls[i] != nil {
					f.keepTwin(s, f.create(ctx, pre, s, prepTwin))
				}
			}
		}()
	}
	for range servers {
		<-wg
	}
	f.mu.Lock()
	f.restartAt = time.Now()
	f.mu.Unlock()
	f.event("note", "fleet", fmt.Sprintf("created the next incarnations of %d servers ahead in %.1fs (%d more kept for their next exits); stopping all and starting them together",
		len(servers), time.Since(began).Seconds(), f.Ahead()))
	stopped := make(chan struct{}, len(servers))
	for _, s := range servers {
		go func() { f.stop(s, "restarted by the operator", 5*time.Second); stopped <- struct{}{} }()
	}
	for range servers {
		<-stopped
	}
	for _, l := range ls {
		if l != nil {
			go f.launch(l)
		}
	}
	return ctx.Err()
}

// prepareAhead creates the next incarnation of a running server while
// the current one still runs (its twin made ahead, if it has one); nil
// when it could not be.
func (f *Fleet) prepareAhead(ctx context.Context, pre lab.Preparer, s *Server) *launch {
	if l := s.popTwin(); l != nil {
		return l
	}
	return f.create(ctx, pre, s, prepAhead)
}

// create prepares an incarnation of s and creates its sandbox; nil when
// it could not be (said on the timeline).
func (f *Fleet) create(ctx context.Context, pre lab.Preparer, s *Server, mode prep) *launch {
	l := f.prepare(s, mode)
	if l == nil {
		return nil
	}
	pd, err := pre.Prepare(ctx, l.prog)
	if err != nil {
		l.logf.Close()
		f.unprepare(l)
		if ctx.Err() == nil {
			f.event("note", s.ID, "could not create its next incarnation ahead: "+err.Error())
		}
		return nil
	}
	l.pending = pd
	return l
}
