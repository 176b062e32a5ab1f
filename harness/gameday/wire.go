package gameday

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/runner"
)

// InfoFile, in the run folder while the dashboard serves, says where it
// is and its token (readable by the run's user only).
const InfoFile = "gameday.json"

// Info is what InfoFile holds.
type Info struct {
	URL   string `json:"url"`
	Addr  string `json:"addr"`
	Token string `json:"token"`
	Pid   int    `json:"pid"`
}

// Wire makes the run o describes steerable from srv's controls and shown
// on its dashboard: once the run folder exists, its journal is tailed
// into the hub and InfoFile written (onDir, when set, is told the
// dashboard's URL). The returned function waits (2 s at most) until the
// dashboard has the journal's end, and removes InfoFile.
func Wire(ctx context.Context, o *runner.Options, srv *Server, onDir func(url string)) func() {
	o.Steer = srv.Controls
	prev := o.OnDir
	var dir string
	o.OnDir = func(d string) {
		if prev != nil {
			prev(d)
		}
		dir = d
		b, _ := json.Marshal(Info{URL: srv.URL(), Addr: srv.Addr(), Token: srv.Token, Pid: os.Getpid()})
		_ = os.WriteFile(filepath.Join(d, InfoFile), b, 0o600)
	}
	settle := Follow(ctx, o, srv.Hub)
	if onDir != nil {
		tail := o.OnDir
		o.OnDir = func(d string) { tail(d); onDir(srv.URL()) }
	}
	return func() {
		settle()
		if dir != "" {
			_ = os.Remove(filepath.Join(dir, InfoFile))
		}
	}
}

// Follow feeds h with the journal of every run o starts, tailed from the
// moment its folder exists. The returned function waits (2 s at most)
// until h has the last run's end.
func Follow(ctx context.Context, o *runner.Options, h *Hub) func() {
	prev := o.OnDir
	var done chan error
	o.OnDir = func(d string) {
		if prev != nil {
			prev(d)
		}
		c := make(chan error, 1)
		go func() { c <- Tail(ctx, filepath.Join(d, journal.File), h) }()
		done = c
	}
	return func() {
		if done == nil {
			return
		}
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}
}
