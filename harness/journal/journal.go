// Package journal is a run's append-only record, kept in the run folder as
// JSON lines while the run goes (journal.jsonl): the report's head, each
// variant as it starts, what its site started (processes with their start
// times, containers, networks), the servers' samples at each tick, the
// timeline's events and fault windows, and each variant's result once
// judged. When the controller dies without writing its report (SIGKILL,
// the OOM killer, a CI timeout), Rebuild turns the journal into a report
// marked aborted with every sample up to the moment of death, and Sweep
// finishes such folders and removes what their run left, identified by
// the journal's own records.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// File is the journal's name in the run folder.
const File = "journal.jsonl"

// Record kinds.
const (
	KindHead    = "head"     // the report's head, the variants planned, the controller
	KindVariant = "variant"  // a variant starts: its result's head
	KindSite    = "site"     // its site is open: run id, placement, network
	KindProc    = "proc"     // a program started: pid and start time, container
	KindPoints  = "pts"      // samples of one tick
	KindEvent   = "ev"       // a timeline event
	KindFaultOn = "fault-on" // a fault window begins
	KindFault   = "fault"    // a fault window, once ended
	KindDone    = "done"     // a variant's judged result (the verdict's inputs)
	KindEnd     = "end"      // the run's report is written
)

// Record is one line of the journal; Kind says which fields it has.
type Record struct {
	Kind    string    `json:"k"`
	Variant string    `json:"v,omitempty"`
	Wall    time.Time `json:"w"`
	// Controller (head) and program (proc): pid, start time in clock
	// ticks since boot (/proc/PID/stat), and the boot they belong to.
	Pid   int    `json:"pid,omitempty"`
	Start uint64 `json:"start,omitempty"`
	Boot  string `json:"boot,omitempty"`
	// Variants are the variants the run plans (head).
	Variants []string `json:"variants,omitempty"`
	// RunID names the variant's cgroups, containers and networks (site);
	// Placement is where it runs; Network the id of its network.
	RunID     string `json:"run_id,omitempty"`
	Placement string `json:"placement,omitempty"`
	Network   string `json:"network,omitempty"`
	// Name is a program's (proc), Desc what it is, Container its id.
	Name      string `json:"name,omitempty"`
	Desc      string `json:"desc,omitempty"`
	Container string `json:"container,omitempty"`
	// Body is the report's head (head) or a variant's result (variant,
	// done).
	Body   json.RawMessage  `json:"body,omitempty"`
	Series []lab.Series     `json:"series,omitempty"`
	Event  *lab.Event       `json:"ev,omitempty"`
	Fault  *lab.FaultWindow `json:"fault,omitempty"`
	// By says who wrote the end: "" the run, "rebuild" a rebuild.
	By string `json:"by,omitempty"`
}

// Writer appends records to a journal. Its methods are safe for
// concurrent use; a nil *Writer does nothing (a run without a journal).
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	err error
}

// Create opens dir's journal for appending.
func Create(dir string) (*Writer, error) {
	f, err := os.OpenFile(filepath.Join(dir, File), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create journal: %w", err)
	}
	return &Writer{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// Add buffers a record; flush says whether to hand it to the kernel now
// (what a kill of the controller does not lose).
func (w *Writer) Add(r Record, flush bool) {
	if w == nil {
		return
	}
	if r.Wall.IsZero() {
		r.Wall = time.Now()
	}
	b, err := json.Marshal(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.f == nil {
		return
	}
	if err != nil {
		w.err = fmt.Errorf("encode journal record %s: %w", r.Kind, err)
		return
	}
	b = append(b, '\n')
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("write journal: %w", err)
		return
	}
	if flush {
		w.flushLocked()
	}
}

// Flush hands what is buffered to the kernel (no fsync: the journal
// outlives its controller, not the machine).
func (w *Writer) Flush() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}

func (w *Writer) flushLocked() {
	if w.err == nil && w.f != nil {
		if err := w.w.Flush(); err != nil {
			w.err = fmt.Errorf("write journal: %w", err)
		}
	}
}

// Err is the first failure to write, if any.
func (w *Writer) Err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes and closes the journal.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return w.err
	}
	w.flushLocked()
	err := w.f.Close()
	w.f = nil
	return errors.Join(w.err, err)
}

// Read reads dir's journal. A last line cut short by the death of its
// writer is left out; a broken line elsewhere is an error.
func Read(dir string) ([]Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return parse(data)
}

func parse(data []byte) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			if isLast(data, b) {
				break // torn by the writer's death
			}
			return out, fmt.Errorf("read journal: line %d: %w", line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return out, fmt.Errorf("read journal: %w", err)
	}
	return out, nil
}

// isLast says whether b is the data's last non-empty line.
func isLast(data, b []byte) bool {
	return bytes.HasSuffix(bytes.TrimSpace(data), b)
}
