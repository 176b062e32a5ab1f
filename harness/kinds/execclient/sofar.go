package execclient

import (
	"slices"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// SeriesSoFar copies the figures the instances printed or served so far
// and the outside series into r, without changing the workload's state.
func (w *workload) SeriesSoFar(r *lab.Result) {
	w.mu.Lock()
	for _, s := range w.figs.Series {
		c := *s
		c.Points = slices.Clone(s.Points)
		r.Series = append(r.Series, &c)
	}
	w.mu.Unlock()
	w.group.SeriesSoFar(r)
}
