package training

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/plugins"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

// For every seed, the training timeline played to its end shows no entry
// that gives away an answer before the trainee has given it (the outcome
// before the first signs' prediction, the cause before a diagnosis), and
// the session offers at least two decoys a responder could have chased.
func TestNoSpoilersAndTwoDecoysForEverySeed(t *testing.T) {
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	all, err := scenarios.Builtin()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.Case] {
			continue
		}
		seen[s.Case] = true
		rec, err := seeds.Get(s.Case)
		require.NoError(t, err)
		require.NotNil(t, rec.Training, s.Case)
		require.GreaterOrEqual(t, len(rec.Training.Decoys), 2, "%s: at least two decoys", s.Case)
		marked := map[string]int{}
		for _, e := range rec.Timeline {
			marked[e.Reveals]++
		}
		require.Positive(t, marked["cause"], "%s: the entries that name the cause are marked", s.Case)

		k, err := lab.GetKind(s.Kind())
		require.NoError(t, err)
		p, err := NewPlan(s, &rec, nil, k.Series(), 1)
		require.NoError(t, err)
		decoys := 0
		for _, c := range p.Causes {
			if !c.real {
				decoys++
			}
		}
		require.GreaterOrEqual(t, decoys, 2, s.Case)

		ss := NewSession(p, "trainee", nil)
		ss.first = time.Now().Add(-time.Duration(p.Span+1) * time.Second) // the whole timeline reached
		ss.opened["signs"] = ss.first
		shown := func() map[string]int {
			n := map[string]int{}
			for _, e := range ss.State().Timeline {
				n[e.Reveals]++
			}
			return n
		}
		require.Zero(t, shown()["outcome"]+shown()["cause"], "%s: nothing given away before any answer", s.Case)
		require.Equal(t, marked[""], shown()[""], "%s: every other entry is shown", s.Case)
		require.NoError(t, ss.Answer(Answer{Checkpoint: "signs", Series: p.Series[0].Name, Direction: "rise"}))
		require.Equal(t, marked["outcome"], shown()["outcome"], "%s: the outcome once predicted", s.Case)
		require.Zero(t, shown()["cause"], "%s: the cause only after a diagnosis", s.Case)
		require.NoError(t, ss.Answer(Answer{Checkpoint: Anytime, Cause: p.Causes[0].ID}))
		require.Equal(t, marked["cause"], shown()["cause"], "%s: the cause once diagnosed", s.Case)
	}
	require.Len(t, seen, 5)
}
