package ebsnode

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

func TestDelayDoublesToItsCapWithJitterInTheUpperHalf(t *testing.T) {
	s := DefaultSettings()
	r := rng(1)
	require.Equal(t, 20*time.Millisecond, s.Delay(1, r))
	require.Equal(t, 20*time.Millisecond, s.Delay(9, r), "2011: a fixed 20 ms")
	s.SearchBackoff, s.SearchBackoffMax = lab.Duration(500*time.Millisecond), lab.Duration(5*time.Second)
	require.Equal(t, time.Second, s.Delay(2, r))
	require.Equal(t, 5*time.Second, s.Delay(10, r))
	s.SearchJitter = true
	seen := map[time.Duration]bool{}
	for range 50 {
		d := s.Delay(10, r)
		require.GreaterOrEqual(t, d, 2500*time.Millisecond)
		require.LessOrEqual(t, d, 5*time.Second)
		seen[d] = true
	}
	require.Greater(t, len(seen), 10, "jitter spreads the waits")
}

func TestSettingsCheck(t *testing.T) {
	s := DefaultSettings()
	require.Empty(t, s.Check())
	s.VolumeKiB = MaxVolumeKiB + 1
	require.Len(t, s.Check(), 1)
}

func TestFrameRoundTrip(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, sendFrame(&b, frameWrite, "vol-a1-3", 8192, []byte("hello")))
	vol, off, data, err := readFrame(bufio.NewReader(&b), 1024)
	require.NoError(t, err)
	require.Equal(t, "vol-a1-3", vol)
	require.Equal(t, int64(8192), off)
	require.Equal(t, "hello", string(data))
	b.Reset()
	require.NoError(t, sendFrame(&b, frameFull, "v", 0, make([]byte, 2048)))
	_, _, _, err = readFrame(bufio.NewReader(&b), 1024)
	require.ErrorContains(t, err, "more than a volume")
}

// TestRunReportsTheListenersTheKernelPicked: with no mirror port given,
// the node binds one the kernel picks and reports it with its status
// API's, both reachable.
func TestRunReportsTheListenersTheKernelPicked(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan [2]string, 1)
	cfg := Config{Settings: DefaultSettings(), ID: "a1", Zone: "zone-a", Dir: t.TempDir(), Listen: "127.0.0.1",
		OnListen: func(status, mirror string) { got <- [2]string{status, mirror} }}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	var addrs [2]string
	select {
	case addrs = <-got:
	case err := <-done:
		t.Fatalf("the node ended before it listened: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not report its listeners within 10s")
	}
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(a)
		require.NoError(t, err)
		require.NotEqual(t, "0", port)
		c, err := net.Dial("tcp", a)
		require.NoError(t, err, "dial %s", a)
		require.NoError(t, c.Close())
	}
	cancel()
	require.NoError(t, <-done)
}
