package lab

import (
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"time"
)

// Env is what a variant hands every plug-in: where it runs, its clock, its
// seed, its folders and how to record an event.
type Env struct {
	// RunID names this variant's cgroups, containers and networks; it is
	// unique per variant.
	RunID string
	// Dir is the variant's folder; LogDir (Dir/logs) holds every log.
	Dir    string
	LogDir string
	// Seed is the variant's seed: every random choice derives from it.
	Seed uint64
	// T0 is the variant's start: the zero of its clock.
	T0 time.Time
	// Site is where the variant's programs run.
	Site Site
	Log  *slog.Logger
	// OnEvent receives every event as it happens (timeline, live views).
	OnEvent func(Event)
}

// Clock is t in seconds on the variant's clock.
func (e *Env) Clock(t time.Time) float64 { return t.Sub(e.T0).Seconds() }

// Now is the variant's clock now.
func (e *Env) Now() float64 { return e.Clock(time.Now()) }

// Event records a point on the variant's timeline.
func (e *Env) Event(kind, source, detail string) { e.EventAt(time.Now(), kind, source, detail) }

// EventAt records a point on the variant's timeline that happened at t
// (told a little later, as a facilitator's hold is).
func (e *Env) EventAt(t time.Time, kind, source, detail string) {
	ev := Event{T: e.Clock(t), Kind: kind, Source: source, Detail: detail}
	if e.Log != nil {
		e.Log.Info(kind, "source", source, "detail", detail, "t", ev.T)
	}
	if e.OnEvent != nil {
		e.OnEvent(ev)
	}
}

// Record records an event without logging it above debug level (a
// client's start among dozens).
func (e *Env) Record(kind, source, detail string) {
	ev := Event{T: e.Now(), Kind: kind, Source: source, Detail: detail}
	if e.Log != nil {
		e.Log.Debug(kind, "source", source, "detail", detail, "t", ev.T)
	}
	if e.OnEvent != nil {
		e.OnEvent(ev)
	}
}

// LogPath is the log file of a program of the variant, and the same path
// relative to the run's folder (for the report's links).
func (e *Env) LogPath(name string) (abs, rel string) {
	return filepath.Join(e.LogDir, name+".log"), filepath.Join(filepath.Base(e.Dir), "logs", name+".log")
}

// Rand is a random source of the variant for one purpose (stream), so that
// adding a random choice in one place leaves the others as they were.
func (e *Env) Rand(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(e.Seed, 0xC4A05+stream))
}
