package zkmirror

import (
	"sort"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// SeriesSoFar adds the clients' series recorded so far (as Collect makes
// them) and the outside series, without changing the workload's state.
func (w *workload) SeriesSoFar(r *lab.Result) {
	if w.group == nil || w.wlog == nil {
		return
	}
	wlog := w.wlog()
	w.mu.Lock()
	for i := range w.samples {
		cs := append([]sample(nil), w.samples[i]...)
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].t < cs[b].t })
		w.clientSeries(r, w.group.ID(i), cs, wlog)
	}
	w.mu.Unlock()
	if g, ok := w.group.(lab.SeriesSoFar); ok {
		g.SeriesSoFar(r)
	}
}
