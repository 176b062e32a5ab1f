package instances

import (
	"slices"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// SeriesSoFar copies the outside series recorded so far into r (copies:
// the group goes on recording).
func (g *Group) SeriesSoFar(r *lab.Result) {
	if g == nil || g.out == nil {
		return
	}
	g.out.mu.Lock()
	defer g.out.mu.Unlock()
	for _, s := range g.out.res.Series {
		c := *s
		c.Points = slices.Clone(s.Points)
		r.Series = append(r.Series, &c)
	}
}
