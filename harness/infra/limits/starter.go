package limits

import (
	"runtime"
	"sync"
)

// starter is the process's starter thread: every program the lab starts
// as a local process is forked from it (Group.Start, OnStarter).
var starter struct {
	once sync.Once
	fns  chan func()
}

// OnStarter runs f on the starter thread, an OS thread locked for the
// life of the process, and returns its error. A child started with
// Pdeathsig from there is killed when chaoslab ends, and only then: the
// kernel ties Pdeathsig to the thread that forked, and the Go runtime
// ends any thread whose goroutine left it locked.
func OnStarter(f func() error) error {
	starter.once.Do(func() {
		starter.fns = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for fn := range starter.fns {
				fn()
			}
		}()
	})
	errc := make(chan error, 1)
	starter.fns <- func() { errc <- f() }
	return <-errc
}
