package training

import (
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/seeds"
)

// onRunClock puts the record's timeline on the run's clock: its first
// timed entry at the first fault's start, its last at nine tenths of the
// span, the others in proportion to their clock times. Entries without a
// clock time follow the entry before them; a record whose times cannot
// be read is spread evenly.
func onRunClock(rec *seeds.Record, span float64) []Entry {
	n := len(rec.Timeline)
	if n == 0 {
		return nil
	}
	at := clockTimes(rec)
	first, last := at[0], at[0]
	for _, t := range at {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	whole := last.Sub(first).Seconds()
	out := make([]Entry, n)
	prev := 0.0
	for i, t := range rec.Timeline {
		pos := float64(i) / float64(max(n-1, 1))
		if whole > 0 && !at[i].IsZero() {
			pos = at[i].Sub(first).Seconds() / whole
		}
		x := max(prev, pos*0.9*span)
		out[i] = Entry{At: x, Clock: clockLabel(t, at[i]), Event: strings.Join(strings.Fields(t.Event), " "), Reveals: t.Reveals}
		prev = x
	}
	return out
}

// clockTimes reads each entry's day and clock; zero where it has none.
func clockTimes(rec *seeds.Record) []time.Time {
	out := make([]time.Time, len(rec.Timeline))
	day := rec.Date
	for i, t := range rec.Timeline {
		if t.Date != "" {
			day = t.Date
		}
		if t.At == "" {
			continue
		}
		hm, _, _ := strings.Cut(t.At, " ")
		if c, err := time.Parse(seeds.DateLayout+" 15:04", day+" "+hm); err == nil {
			out[i] = c
		}
	}
	return out
}

func clockLabel(t seeds.TimelineEntry, at time.Time) string {
	switch {
	case t.At != "" && t.Date != "":
		return t.Date + " " + t.At
	case t.At != "":
		return t.At
	case t.Date != "":
		return t.Date
	}
	return "(no time given)"
}
