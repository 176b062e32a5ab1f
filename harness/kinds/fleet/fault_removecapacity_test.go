package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/kinds/fleet"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// shrinking is a fleet of n servers, the last added of them added, whose
// servers each hold one thread per peer plus 6.
type shrinking struct {
	fleet.CapacityTarget
	lab.Target
	n, added int
	removed  []int
	events   []string
}

func (s *shrinking) Name() string                  { return "fleet" }
func (s *shrinking) Restart(context.Context) error { return nil }
func (s *shrinking) Size() (int, int)              { return s.n, s.added }
func (s *shrinking) Event(kind, _, detail string)  { s.events = append(s.events, kind+": "+detail) }
func (s *shrinking) Threads() (int, float64, int) {
	return s.n - 1 + 6, float64(s.n - 1 + 6), 40
}
func (s *shrinking) RemoveServers(_ context.Context, n int) ([]string, error) {
	var names []string
	for range n {
		names = append(names, fmt.Sprintf("fe-%02d", s.n))
		s.n--
		s.added = max(s.added-1, 0)
	}
	s.removed = append(s.removed, n)
	return names, nil
}

func removeCapacity(t *testing.T, params string) (*fleet.RemoveCapacity, error) {
	t.Helper()
	f := faults.MustNew("remove-capacity").(*fleet.RemoveCapacity)
	return f, faults.DecodeParams(f, params)
}

// remove-capacity's parameters: the added servers by default, a number or
// a fraction, not both.
func TestRemoveCapacityParams(t *testing.T) {
	f, err := removeCapacity(t, "{}")
	require.NoError(t, err)
	require.Zero(t, f.Servers)
	require.Zero(t, f.Fraction)
	f, err = removeCapacity(t, "servers: 3")
	require.NoError(t, err)
	require.Equal(t, 3, f.Servers)
	f, err = removeCapacity(t, "fraction: 0.25")
	require.NoError(t, err)
	require.Equal(t, 0.25, f.Fraction)
	for in, want := range map[string]string{
		"servers: -1":               "servers: want 0",
		"fraction: 1":               "fraction: want 0",
		"fraction: -0.1":            "fraction: want 0",
		"servers: 2\nfraction: 0.5": "not both",
	} {
		_, err := removeCapacity(t, in)
		require.ErrorContains(t, err, want, in)
	}
	_, err = removeCapacity(t, "servers: two")
	require.Error(t, err)
	require.Equal(t, "remove-capacity", faults.ResponderKind("remove-capacity", "fleet"))
}

// By default the added servers go; a number or a fraction (rounded up)
// otherwise; never the whole fleet, and nothing when nothing was added
// and no number was given. The threads before and after are recorded.
func TestRemoveCapacityCounts(t *testing.T) {
	for _, c := range []struct {
		params   string
		n, added int
		want     int
		refused  string
	}{
		{"{}", 36, 4, 4, ""},
		{"servers: 2", 36, 4, 2, ""},
		{"fraction: 0.1", 36, 4, 4, ""},
		{"fraction: 0.5", 8, 0, 4, ""},
		{"{}", 32, 0, 0, "no added capacity"},
		{"servers: 8", 8, 0, 0, "would leave none"},
	} {
		f, err := removeCapacity(t, c.params)
		require.NoError(t, err)
		fl := &shrinking{n: c.n, added: c.added}
		require.NoError(t, f.Available(fl))
		err = f.Inject(context.Background(), fl, time.Millisecond)
		if c.refused != "" {
			require.ErrorContains(t, err, c.refused, c.params)
			require.Empty(t, fl.removed, "nothing removed when refused")
			continue
		}
		require.NoError(t, err)
		require.Equal(t, []int{c.want}, fl.removed, c.params)
		require.Len(t, fl.events, 2)
		require.Contains(t, fl.events[1], fmt.Sprintf("most %d (was %d)", c.n-c.want+5, c.n+5))
	}
	require.ErrorContains(t, faults.MustNew("remove-capacity").Available(notFleet{}), "not a front-end fleet")
}

// notFleet is a target that is no fleet.
type notFleet struct{ lab.Target }

func (notFleet) Name() string { return "agent-1" }
