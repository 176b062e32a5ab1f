package owner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAliveNeedsTheSameStart(t *testing.T) {
	o := Label()
	require.NotEmpty(t, o)
	require.True(t, Alive(o), "this process is alive")
	require.False(t, Alive("1-0"), "pid 1 with another start time is not the owner")
	require.False(t, Alive("999999999-5"), "no such process")
	require.False(t, Alive("garbage"))
}
