// Package gameday serves a live view of a run on 127.0.0.1: the run's
// journal, tailed as it grows, drives a dashboard (the report's charts,
// fault windows and events as they happen, each variant's phase and, once
// judged, its hypotheses), a Prometheus exposition of the latest samples,
// and the facilitator's and operators' controls, which act only on
// requests bearing the run's token.
package gameday

import (
	"encoding/json"
	"math"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// maxPoints bounds what the hub keeps of one series (a long game day at
// one sample a second keeps its last 2 hours).
const maxPoints = 7200

// Hub holds what the run has measured so far and hands every change to
// the dashboards that listen. Its methods are safe for concurrent use.
type Hub struct {
	mu     sync.Mutex
	head   json.RawMessage
	series map[key]*lab.Series
	// msgs is every message sent so far but the samples (events, faults,
	// phases, results), replayed to a dashboard that joins late.
	msgs    [][]byte
	subs    map[chan []byte]struct{}
	updated time.Time
}

type key struct{ variant, name, source string }

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{series: map[key]*lab.Series{}, subs: map[chan []byte]struct{}{}}
}

// Message is what a dashboard receives, one per server-sent event.
type Message struct {
	Type    string           `json:"type"` // head, points, event, fault, variant, done, end, control
	Variant string           `json:"variant,omitempty"`
	Wall    time.Time        `json:"wall"`
	Body    json.RawMessage  `json:"body,omitempty"`
	Series  []lab.Series     `json:"series,omitempty"`
	Event   *lab.Event       `json:"event,omitempty"`
	Fault   *lab.FaultWindow `json:"fault,omitempty"`
	Detail  string           `json:"detail,omitempty"`
}

// Apply takes one journal record into the hub and tells the dashboards.
func (h *Hub) Apply(r journal.Record) {
	m := Message{Variant: r.Variant, Wall: r.Wall, Body: r.Body, Event: r.Event, Fault: r.Fault}
	switch r.Kind {
	case journal.KindHead:
		m.Type = "head"
	case journal.KindVariant:
		m.Type = "variant"
	case journal.KindPoints:
		m.Type, m.Series, m.Body = "points", r.Series, nil
		h.keep(r.Variant, r.Series)
	case journal.KindEvent:
		m.Type = "event"
	case journal.KindFault:
		m.Type = "fault"
	case journal.KindDone:
		m.Type = "done"
	case journal.KindEnd:
		m.Type = "end"
	default:
		return
	}
	h.send(m, r.Kind != journal.KindPoints)
}

// Control tells the dashboards what a facilitator or an operator did.
func (h *Hub) Control(variant, detail string) {
	h.send(Message{Type: "control", Variant: variant, Wall: time.Now(), Detail: detail}, true)
}

func (h *Hub) send(m Message, keep bool) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.updated = time.Now()
	if m.Type == "head" {
		h.head = m.Body
	}
	if keep {
		h.msgs = append(h.msgs, b)
	}
	for c := range h.subs {
		select {
		case c <- b:
		default: // a dashboard that does not keep up misses a message, never the run
		}
	}
}

// keep appends a tick's points to the hub's series.
func (h *Hub) keep(variant string, ss []lab.Series) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range ss {
		k := key{variant, s.Name, s.Source}
		have := h.series[k]
		if have == nil {
			have = &lab.Series{Name: s.Name, Source: s.Source, Unit: s.Unit}
			h.series[k] = have
		}
		have.Points = append(have.Points, s.Points...)
		if n := len(have.Points); n > maxPoints {
			have.Points = append(have.Points[:0:0], have.Points[n-maxPoints:]...)
		}
	}
}

// Subscribe returns a channel of messages, primed with what a dashboard
// needs to draw the run so far, and a function that ends the subscription.
func (h *Hub) Subscribe() (<-chan []byte, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan []byte, 4096+len(h.msgs)+len(h.series))
	for _, b := range h.msgs {
		c <- b
	}
	for k, s := range h.series {
		b, err := json.Marshal(Message{Type: "points", Variant: k.variant, Series: []lab.Series{*s}})
		if err == nil {
			c <- b
		}
	}
	h.subs[c] = struct{}{}
	return c, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, c)
	}
}

// Latest is the newest sample of every series, for the exposition.
func (h *Hub) Latest() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Sample, 0, len(h.series))
	for k, s := range h.series {
		for i := len(s.Points) - 1; i >= 0; i-- {
			if v := float64(s.Points[i].V); !math.IsNaN(v) {
				out = append(out, Sample{Variant: k.variant, Name: s.Name, Source: s.Source, Unit: s.Unit, T: s.Points[i].T, V: v})
				break
			}
		}
	}
	return out
}

// Sample is the newest value of one series.
type Sample struct {
	Variant, Name, Source, Unit string
	T, V                        float64
}

// Updated is when the hub last changed.
func (h *Hub) Updated() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.updated
}
