// Package instances supervises the N programs of a workload on a site:
// starts spread over a window, a restart policy (a supervisor such as
// Kubernetes bringing a dead client back after a delay), each
// incarnation's exit and OOM kill as the placement recognised it, and a
// summary per instance for the report.
package instances

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Config of a group of instances.
type Config struct {
	Env   *lab.Env
	Count int
	// Prefix names the instances: client-01, client-02...
	Prefix string
	// Program is the program of instance i's incarnation inc (the group
	// sets its Name, Role, Stdout and Stderr).
	Program func(i, inc int) lab.Program
	// OnLine receives each line an incarnation prints on stdout.
	OnLine func(i, inc int, line []byte)
	// OnExit is called when an incarnation ended by itself.
	OnExit func(i, inc int, e lab.Exit)
	// Spread spreads the first starts evenly over this span.
	Spread time.Duration
	// Restart starts a dead instance again after RestartDelay.
	Restart      bool
	RestartDelay time.Duration
	Role         string
	// Cluster, when set, is the cluster the instances are clients of: if
	// it lists its client connections (lab.ConnSampler), each instance's
	// requests are measured from the servers' side too.
	Cluster lab.Cluster
	// Relayed, when the cluster does not list its client connections,
	// gives what a relay in front of each instance counted of its traffic
	// to the servers (the same series, from the relays).
	Relayed Counter
}

// Counter gives what a relay in front of instance i counted: the
// connections it opened and the requests it sent (since its start), and
// its requests not answered yet.
type Counter interface {
	Counts(i int) (connections, requests, outstanding float64)
}

// Group is a running group of instances.
type Group struct {
	cfg    Config
	insts  []*inst
	cancel context.CancelFunc
	wg     sync.WaitGroup
	out    *outside
}

type inst struct {
	id, logPath string
	mu          sync.Mutex
	sum         lab.Instance
	proc        lab.Proc
	alive       bool
	// held, while an operator has the instance stopped, is closed when
	// it may start again.
	held chan struct{}
}

// Start launches the instances over the spread and returns at once.
func Start(ctx context.Context, cfg Config) *Group {
	ctx, cancel := context.WithCancel(ctx)
	g := &Group{cfg: cfg, cancel: cancel}
	for i := range cfg.Count {
		id := fmt.Sprintf("%s-%02d", cfg.Prefix, i+1)
		abs, rel := cfg.Env.LogPath(id)
		g.insts = append(g.insts, &inst{id: id, logPath: abs, sum: lab.Instance{ID: id, Log: rel}})
	}
	g.out = &outside{g: g}
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.out.run(ctx) }()
	g.wg.Add(len(g.insts))
	go func() {
		for i := range g.insts {
			if i > 0 && cfg.Spread > 0 && !lab.Sleep(ctx, cfg.Spread/time.Duration(cfg.Count)) {
				for range g.insts[i:] {
					g.wg.Done()
				}
				return
			}
			go g.run(ctx, i)
		}
	}()
	return g
}

// run supervises instance i until the group stops.
func (g *Group) run(ctx context.Context, i int) {
	defer g.wg.Done()
	for inc := 0; ctx.Err() == nil; inc++ {
		if err := g.once(ctx, i, inc); err != nil && ctx.Err() == nil {
			g.cfg.Env.Record("note", g.insts[i].id, "could not start: "+err.Error())
		}
		if held := g.insts[i].heldNow(); held != nil {
			select { // stopped by an operator: back when started, at once
			case <-ctx.Done():
				return
			case <-held:
				continue
			}
		}
		if !g.cfg.Restart || !lab.Sleep(ctx, g.cfg.RestartDelay) {
			return
		}
	}
}

// once runs one incarnation to its end.
func (g *Group) once(ctx context.Context, i, inc int) error {
	in := g.insts[i]
	logf, err := os.OpenFile(in.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logf.Close()
	prog := g.cfg.Program(i, inc)
	prog.Name, prog.Alias, prog.Role, prog.Stderr = fmt.Sprintf("%s-%d", in.id, inc), in.id, g.cfg.Role, logf
	if g.cfg.OnLine != nil {
		prog.Stdout = func(line []byte) { g.cfg.OnLine(i, inc, line) }
	}
	fmt.Fprintf(logf, "=== %s start %d: %s%s\n", time.Now().Format(time.RFC3339Nano), inc, prog.Agent, strings.Join(prog.Command, " "))
	p, err := g.cfg.Env.Site.Start(ctx, prog)
	if err != nil {
		return err
	}
	defer p.Release()
	in.mu.Lock()
	in.sum.Starts++
	in.alive, in.proc = true, p
	in.mu.Unlock()
	g.cfg.Env.Record("client-start", in.id, fmt.Sprintf("incarnation %d, %s", inc, p.Desc()))
	var pe lab.ProcExit
	select {
	case <-p.Done():
		pe = p.Exit()
	case <-ctx.Done():
		pe = p.Stop(3 * time.Second)
	}
	in.mu.Lock()
	in.alive, in.proc = false, nil
	in.mu.Unlock()
	if pe.Stopped && !pe.OOM {
		return nil // the end of the run
	}
	g.exited(i, inc, pe)
	return nil
}

func (g *Group) exited(i, inc int, pe lab.ProcExit) {
	in := g.insts[i]
	e := pe.AsExit(g.cfg.Env.Now())
	in.mu.Lock()
	in.sum.Exits = append(in.sum.Exits, e)
	if e.OOM {
		in.sum.OOMKills++
	}
	in.mu.Unlock()
	kind := "client-exit"
	if e.OOM {
		kind = "oom-kill"
	}
	g.cfg.Env.Record(kind, in.id, e.How)
	if g.cfg.OnExit != nil {
		g.cfg.OnExit(i, inc, e)
	}
}

// Stop ends every instance and waits for them.
func (g *Group) Stop() {
	g.cancel()
	g.wg.Wait()
}

// Hold stops instance i until Release: its incarnation is killed and the
// restart policy waits.
func (g *Group) Hold(i int) error {
	in := g.insts[i]
	in.mu.Lock()
	if in.held == nil {
		in.held = make(chan struct{})
	}
	p := in.proc
	in.mu.Unlock()
	g.cfg.Env.Record("note", in.id, "stopped by an operator")
	if p == nil {
		return nil // not running now; it stays down until released
	}
	return p.Signal(syscall.SIGKILL)
}

// Release lets instance i, held by Hold, start again at once.
func (g *Group) Release(i int) {
	in := g.insts[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.held != nil {
		close(in.held)
		in.held = nil
	}
}

func (in *inst) heldNow() chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.held
}

// Len is the number of instances.
func (g *Group) Len() int { return len(g.insts) }

// Alive reports whether instance i runs now.
func (g *Group) Alive(i int) bool {
	in := g.insts[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.alive
}

// Proc is instance i's running incarnation (nil when none runs).
func (g *Group) Proc(i int) lab.Proc {
	in := g.insts[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.proc
}

// ID is instance i's name.
func (g *Group) ID(i int) string { return g.insts[i].id }

// Summary is instance i's life so far; edit lets the caller add its own
// figures (requests, reconnects, peak RSS).
func (g *Group) Summary(i int, edit func(*lab.Instance)) lab.Instance {
	in := g.insts[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	if edit != nil {
		edit(&in.sum)
	}
	out := in.sum
	out.Exits = append([]lab.Exit(nil), in.sum.Exits...)
	return out
}
