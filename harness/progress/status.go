// Package progress shows a run to the person who started it: a status
// line per variant (phase, elapsed of the expected length, ETA, the
// leader and the few figures the plug-ins declare), redrawn in place on a
// terminal and printed now and then elsewhere; phase changes; warnings;
// and the closing summary. The detail goes to a log file in the run
// folder (Logs).
package progress

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Status is where one variant of a run is.
type Status struct {
	Variant string
	// Index (from 1) and Of count the run's variants.
	Index, Of int
	// Phase is what the variant is doing: servers up, seed, warm-up, a
	// fault, observe, collect, teardown.
	Phase string
	// Elapsed is the time since the variant started; Total its length as
	// now expected, never less than Elapsed.
	Elapsed, Total time.Duration
	// Late is how much later than planned at the workload's start the
	// variant now expects to end (0 when on time).
	Late time.Duration
	// Steering says why the end is the facilitator's, not the plan's
	// ("held by carol"): shown in place of the lateness.
	Steering string
	// Left is the time until the whole run ends, every variant counted.
	Left time.Duration
	// Leader is the leader as a stable reading ("electing" when the
	// latest samples disagree or show none; "" when not sampled yet).
	Leader string
	// Figures are what the system and the workload declare worth
	// watching, each shown as its key and value.
	Figures []slog.Attr
}

// Line is the status as one line.
func (s Status) Line() string {
	parts := []string{fmt.Sprintf("variant %d/%d %s", s.Index, s.Of, s.Variant), s.Phase, s.timing()}
	if s.Leader != "" {
		parts = append(parts, "leader "+s.Leader)
	}
	for _, a := range s.Figures {
		if f := Figure(a); f != "" {
			parts = append(parts, f)
		}
	}
	return strings.Join(parts, " · ")
}

// Head is the variant, its phase and the time elapsed.
func (s Status) Head() string {
	return fmt.Sprintf("variant %d/%d %s · %s · %s", s.Index, s.Of, s.Variant, s.Phase, Clock(s.Elapsed))
}

// timing is "0:42 of ~3:10 · ETA 2:28", saying so when the end is later
// than planned.
func (s Status) timing() string {
	t := fmt.Sprintf("%s of ~%s", Clock(s.Elapsed), Clock(max(s.Total, s.Elapsed)))
	if s.Steering != "" {
		return t + " (" + s.Steering + ")"
	}
	if s.Late >= 2*time.Second {
		t += fmt.Sprintf(" (%s later than planned)", Clock(s.Late))
	}
	return t + " · ETA " + Clock(s.Left)
}

// Figure is one declared figure as "key value" (underscores in the key
// read as spaces); a group or an empty value is left out.
func Figure(a slog.Attr) string {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup || a.Key == "" {
		return ""
	}
	s := v.String()
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(a.Key, "_", " ") + " " + s
}

// Clock is d as m:ss (h:mm:ss from an hour on), rounded to the second.
func Clock(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, sec := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}

// Watcher is told where a run is: Phase when a variant enters a phase,
// Update about every second.
type Watcher interface {
	Phase(Status)
	Update(Status)
}
