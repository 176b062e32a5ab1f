package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/reports"
)

// sweepJournals finishes the run folders under outDir whose controller
// died: what they left is removed and their reports written, aborted.
func sweepJournals(ctx context.Context, outDir string, log *slog.Logger) {
	done, err := journal.Sweep(ctx, outDir, log)
	if err != nil {
		log.Warn("sweep run folders of controllers that died", "err", err)
	}
	if len(done) > 0 {
		log.Info("sweep: reports of runs whose controller died written", "runs", len(done))
	}
}

// openJournal starts the run's journal with the report's head, the
// variants planned and this controller (pid and start time).
func openJournal(dir string, r *reports.Report, variants []string, log *slog.Logger) *journal.Writer {
	j, err := journal.Create(dir)
	if err != nil {
		log.Warn("no run journal: a killed controller will leave no report", "err", err)
		return nil
	}
	head, err := json.Marshal(r)
	if err != nil {
		log.Warn("no run journal", "err", err)
		_ = j.Close()
		return nil
	}
	start, _ := journal.ProcStart(os.Getpid())
	j.Add(journal.Record{Kind: journal.KindHead, Pid: os.Getpid(), Start: start, Boot: journal.BootID(),
		Variants: variants, Body: head}, true)
	return j
}

// closeJournal marks the run's report written and, once it is, keeps
// the journal compressed (journal.jsonl.gz: a sweep does not read it).
func closeJournal(j *journal.Writer, dir string, log *slog.Logger) {
	if j == nil {
		return
	}
	j.Add(journal.Record{Kind: journal.KindEnd}, true)
	if err := j.Close(); err != nil {
		log.Warn("run journal", "err", err)
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		return
	}
	if err := gzipFile(filepath.Join(dir, journal.File)); err != nil {
		log.Warn("compress run journal", "err", err)
	}
}

// journalVariant records a variant's start (its result's head) or, done,
// its judged result.
func (p *plan) journalVariant(vr *reports.VariantResult, done bool) {
	if p.journal == nil {
		return
	}
	kind := journal.KindVariant
	if done {
		kind = journal.KindDone
	}
	body, err := json.Marshal(vr)
	if err != nil {
		return
	}
	p.journal.Add(journal.Record{Kind: kind, Variant: vr.Name, Body: body}, true)
}

// journalSite records the variant's site (run id, network) and has it
// record every program it starts (pid and start time, container).
func (v *variant) journalSite(site lab.Site) {
	j := v.p.journal
	if j == nil {
		return
	}
	rec := journal.Record{Kind: journal.KindSite, Variant: v.name, Wall: v.env.T0, RunID: v.runID, Placement: v.p.plc.Name()}
	if n, ok := site.(lab.NetworkIDer); ok {
		rec.Network = n.NetworkID()
	}
	j.Add(rec, true)
	if sw, ok := site.(lab.StartWatcher); ok {
		boot := journal.BootID()
		sw.WatchStarts(func(prog lab.Program, proc lab.Proc) {
			r := journal.Record{Kind: journal.KindProc, Variant: v.name, Name: prog.Name, Desc: proc.Desc(), Pid: proc.Pid(), Boot: boot}
			if c, ok := proc.(lab.ContainerIDer); ok {
				r.Container = c.ContainerID()
			}
			if r.Pid > 0 {
				r.Start, _ = journal.ProcStart(r.Pid)
			}
			j.Add(r, true)
		})
	}
}

// journalEvent records a timeline event.
func (v *variant) journalEvent(e lab.Event) {
	v.p.journal.Add(journal.Record{Kind: journal.KindEvent, Variant: v.name, Event: &e}, true)
}

// journalFault records a fault window as it begins (on) and once it
// ended.
func (v *variant) journalFault(fw lab.FaultWindow, on bool) {
	kind := journal.KindFault
	if on {
		kind = journal.KindFaultOn
	}
	v.p.journal.Add(journal.Record{Kind: kind, Variant: v.name, Fault: &fw}, true)
}

// journalSamples appends the servers' new sample rounds to the journal at
// each tick of the sampler, until ctx ends (and once more then).
func (v *variant) journalSamples(ctx context.Context, smp *sampler) {
	if v.p.journal == nil {
		return
	}
	t := time.NewTicker(smp.every)
	defer t.Stop()
	units := map[string]string{}
	for _, d := range v.p.sys.Series() {
		units[d.Name] = d.Unit
	}
	next, st, written := 0, newRoundState(units), map[[2]string]int{}
	for {
		next = v.journalRounds(smp, next, st)
		v.journalWorkload(written)
		select {
		case <-ctx.Done():
			v.journalRounds(smp, next, st)
			v.journalWorkload(written)
			return
		case <-t.C:
		}
	}
}

// journalWorkload appends the points the workload recorded since the last
// tick (written: how many of each series are in the journal), when it can
// say them while it runs.
func (v *variant) journalWorkload(written map[[2]string]int) {
	v.mu.Lock()
	w := v.work
	v.mu.Unlock()
	sf, ok := w.(lab.SeriesSoFar)
	if !ok {
		return
	}
	var r lab.Result
	sf.SeriesSoFar(&r)
	var out []lab.Series
	for _, s := range r.Series {
		key := [2]string{s.Name, s.Source}
		n := written[key]
		if n > len(s.Points) {
			n = 0 // not the series it was: journal it again
		}
		if n < len(s.Points) {
			out = append(out, lab.Series{Name: s.Name, Source: s.Source, Unit: s.Unit, Points: s.Points[n:]})
			written[key] = len(s.Points)
		}
	}
	if len(out) > 0 {
		v.p.journal.Add(journal.Record{Kind: journal.KindPoints, Variant: v.name, Series: out}, true)
	}
}

// journalRounds writes the rounds from index next on; it returns the
// index after the last written.
func (v *variant) journalRounds(smp *sampler, next int, st *roundState) int {
	smp.mu.Lock()
	rounds := append([][]lab.MemberSample(nil), smp.rounds[min(next, len(smp.rounds)):]...)
	smp.mu.Unlock()
	if len(rounds) == 0 {
		return next
	}
	v.p.journal.Add(journal.Record{Kind: journal.KindPoints, Variant: v.name, Series: roundSeries(rounds, st)}, true)
	return next + len(rounds)
}

// roundSeries are sample rounds as series, as the report has them
// (roundState.add).
func roundSeries(rounds [][]lab.MemberSample, st *roundState) []lab.Series {
	var r lab.Result
	for _, round := range rounds {
		st.add(&r, round)
	}
	out := make([]lab.Series, len(r.Series))
	for i, s := range r.Series {
		out[i] = *s
	}
	return out
}
