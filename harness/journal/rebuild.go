package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/chaoslab/chaoslab/reports"
	"github.com/chaoslab/chaoslab/verdict"
)

// Run is what a journal says of its run.
type Run struct {
	Dir     string
	Records []Record
}

// Load reads the journal of the run folder dir.
func Load(dir string) (*Run, error) {
	recs, err := Read(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Records: recs}, nil
}

// Exists says whether dir holds a journal.
func Exists(dir string) bool {
	return exists(filepath.Join(dir, File))
}

// Head is the journal's first record, when it is the run's head.
func (r *Run) Head() (Record, bool) {
	if len(r.Records) == 0 || r.Records[0].Kind != KindHead {
		return Record{}, false
	}
	return r.Records[0], true
}

// Ended says whether the run's report was written (by the run or by a
// rebuild): an end record, or a report.json in the folder.
func (r *Run) Ended() bool {
	for _, rec := range r.Records {
		if rec.Kind == KindEnd {
			return true
		}
	}
	return exists(filepath.Join(r.Dir, "report.json"))
}

// Cleaned says whether what the run started is known to be gone: the run
// ended itself (its controller stopped everything), or a sweep cleaned
// after it.
func (r *Run) Cleaned() bool {
	for _, rec := range r.Records {
		if rec.Kind == KindEnd && (rec.By == "" || rec.By == BySweep) {
			return true
		}
	}
	return false
}

// ControllerAlive says whether the process that wrote the journal is
// still running (checked by pid and start time, so a reused pid is not it).
func (r *Run) ControllerAlive() bool {
	h, ok := r.Head()
	return ok && Same(h.Pid, h.Start, h.Boot)
}

// Death says when the controller was last heard of: the last record's
// time, and the last sample's time on its variant's clock.
type Death struct {
	Pid        int
	LastRecord time.Time
	Variant    string
	LastSample float64 // seconds on the variant's clock; NaN without a sample
}

// Cause is the reason an aborted report gives.
func (d Death) Cause() string {
	s := fmt.Sprintf("the controller died (pid %d) before writing the report", d.Pid)
	if d.Variant != "" && !math.IsNaN(d.LastSample) {
		s += fmt.Sprintf("; last sample at %.1fs of variant %s", d.LastSample, d.Variant)
	}
	return s + fmt.Sprintf("; last heard of at %s", d.LastRecord.UTC().Format(time.RFC3339))
}

// Rebuild makes the report of a run whose controller died: the head as
// the run began, every variant as far as the journal follows it (samples,
// events, faults); a variant judged before the death keeps its verdict,
// the others are marked aborted with the cause.
func (r *Run) Rebuild() (*reports.Report, Death, error) {
	h, ok := r.Head()
	if !ok {
		return nil, Death{}, errors.New("rebuild report: the journal has no head")
	}
	rep, err := decodeHead(h.Body)
	if err != nil {
		return nil, Death{}, err
	}
	d := Death{Pid: h.Pid, LastRecord: h.Wall, LastSample: math.NaN()}
	byName := map[string]*reports.VariantResult{}
	done := map[string]bool{}
	for _, rec := range r.Records[1:] {
		d.LastRecord = latest(d.LastRecord, rec.Wall)
		if rec.Kind == KindVariant || rec.Kind == KindDone {
			vr, err := decodeVariant(rec.Body)
			if err != nil {
				return nil, d, err
			}
			if old := byName[vr.Name]; old != nil {
				*old = *vr
			} else {
				byName[vr.Name] = vr
				rep.Variants = append(rep.Variants, vr)
			}
			done[vr.Name] = rec.Kind == KindDone
			continue
		}
		vr := byName[rec.Variant]
		if vr == nil || done[rec.Variant] {
			continue
		}
		apply(vr, rec, &d)
	}
	cause := d.Cause()
	for _, vr := range rep.Variants {
		if !done[vr.Name] {
			cutShort(vr, d)
			vr.Verdict, vr.Reason = verdict.Aborted, cause
			vr.Sort()
			vr.LogDir = vr.Name + "/logs"
			vr.Timing.WallS = d.LastRecord.Sub(vr.StartedAt).Seconds()
		}
	}
	for _, name := range h.Variants {
		if byName[name] == nil {
			rep.Variants = append(rep.Variants, &reports.VariantResult{Name: name, Verdict: verdict.Aborted, Reason: "not started: " + cause})
		}
	}
	rep.EndedAt = d.LastRecord
	if _, _, err := rep.Recheck(); err != nil {
		return nil, d, fmt.Errorf("rebuild report: %w", err)
	}
	if rep.Verdict != verdict.Aborted {
		rep.Verdict, rep.Reason = verdict.Aborted, cause
	}
	rep.ExpectationMet = false
	return rep, d, nil
}

// apply adds one record of a variant that was not judged.
func apply(vr *reports.VariantResult, rec Record, d *Death) {
	switch rec.Kind {
	case KindSite:
		vr.StartedAt = rec.Wall
	case KindPoints:
		for _, s := range rec.Series {
			for _, p := range s.Points {
				vr.Add(s.Name, s.Source, s.Unit, p.T, float64(p.V))
				if math.IsNaN(d.LastSample) || p.T > d.LastSample || d.Variant != rec.Variant {
					d.LastSample, d.Variant = p.T, rec.Variant
				}
			}
		}
	case KindEvent:
		if rec.Event != nil {
			vr.Events = append(vr.Events, *rec.Event)
		}
	case KindFaultOn:
		if rec.Fault != nil {
			fw := *rec.Fault
			fw.End = math.NaN() // open until it ends or the controller dies
			vr.Faults = append(vr.Faults, fw)
		}
	case KindFault:
		if rec.Fault == nil {
			return
		}
		for i, fw := range vr.Faults {
			if math.IsNaN(fw.End) && fw.Fault == rec.Fault.Fault && fw.Start == rec.Fault.Start {
				vr.Faults[i] = *rec.Fault
				return
			}
		}
		vr.Faults = append(vr.Faults, *rec.Fault)
	}
}

// cutShort ends the fault windows still open at the death at the
// variant's last sample.
func cutShort(vr *reports.VariantResult, d Death) {
	end := 0.0
	for _, s := range vr.Series {
		if n := len(s.Points); n > 0 {
			end = math.Max(end, s.Points[n-1].T)
		}
	}
	for i := range vr.Faults {
		if fw := &vr.Faults[i]; math.IsNaN(fw.End) {
			fw.End = math.Max(end, fw.Start)
			fw.Detail = "cut short: " + d.Cause()
		}
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// decodeHead is the report's head as the run began (its spec with it).
func decodeHead(body json.RawMessage) (*reports.Report, error) {
	var rep reports.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("rebuild report: decode head: %w", err)
	}
	rep.Variants = nil
	return &rep, nil
}

func decodeVariant(body json.RawMessage) (*reports.VariantResult, error) {
	var vr reports.VariantResult
	if err := json.Unmarshal(body, &vr); err != nil {
		return nil, fmt.Errorf("rebuild report: decode variant: %w", err)
	}
	return &vr, nil
}

// Who ended a journal whose run did not (Record.By).
const (
	ByReport = "report" // chaoslab report: the report only
	BySweep  = "sweep"  // a later run's sweep: the report and the cleaning
)

// Finish writes the aborted report of a run whose controller died and
// marks the journal ended (by: ByReport or BySweep). It refuses a run
// whose controller is alive or whose report was written.
func Finish(dir, by string) (*reports.Report, Death, error) {
	run, err := Load(dir)
	if err != nil {
		return nil, Death{}, err
	}
	return run.finish(by)
}

func (r *Run) finish(by string) (*reports.Report, Death, error) {
	if r.Ended() {
		return nil, Death{}, fmt.Errorf("finish run %s: its report was written", r.Dir)
	}
	if r.ControllerAlive() {
		return nil, Death{}, fmt.Errorf("finish run %s: its controller is still running", r.Dir)
	}
	rep, d, err := r.Rebuild()
	if err != nil {
		return nil, d, err
	}
	if err := reports.Write(rep, r.Dir); err != nil {
		return nil, d, fmt.Errorf("finish run %s: %w", r.Dir, err)
	}
	return rep, d, r.markEnd(by)
}

// markEnd appends an end record written by by.
func (r *Run) markEnd(by string) error {
	w, err := Create(r.Dir)
	if err != nil {
		return err
	}
	w.Add(Record{Kind: KindEnd, By: by}, true)
	return w.Close()
}
