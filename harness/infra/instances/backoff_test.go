package instances

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// The delays double from Initial up to Max, and the bounds are checked.
func TestBackoff(t *testing.T) {
	b := Backoff{Initial: lab.Duration(time.Second), Max: lab.Duration(10 * time.Second)}
	var got []time.Duration
	for n := range 6 {
		got = append(got, b.Delay(n))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
	require.Equal(t, 20*time.Second, b.ResetAfter())
	require.Empty(t, b.Check("r"))
	require.Empty(t, Backoff{}.Check("r"), "off")
	require.False(t, Backoff{}.On())
	bad := Backoff{Initial: lab.Duration(time.Millisecond), Max: lab.Duration(time.Second)}.Check("r")
	require.Len(t, bad, 1)
	require.Equal(t, "r.initial", bad[0].Field)
	require.Contains(t, bad[0].Msg, "busy loop")
	bad = Backoff{Initial: lab.Duration(2 * time.Second), Max: lab.Duration(time.Second)}.Check("r")
	require.Len(t, bad, 1)
	require.Equal(t, "r.max", bad[0].Field)
}
