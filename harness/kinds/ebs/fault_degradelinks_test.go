package ebs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
)

func TestDegradeLinksCheck(t *testing.T) {
	f := faults.MustNew("degrade-links").(*DegradeLinks)
	require.Empty(t, f.Check(), "the defaults are valid")
	for _, tc := range []struct {
		name  string
		set   func(*DegradeLinks)
		field string
	}{
		{"no toxic", func(f *DegradeLinks) { f.Latency, f.BandwidthKBps = 0, 0 }, "latency"},
		{"negative latency", func(f *DegradeLinks) { f.Latency = faults.Duration(-time.Second) }, "latency"},
		{"latency a partition", func(f *DegradeLinks) { f.Latency = faults.Duration(2 * time.Minute) }, "latency"},
		{"jitter over latency", func(f *DegradeLinks) { f.Jitter = faults.Duration(time.Second) }, "jitter"},
		{"negative bandwidth", func(f *DegradeLinks) { f.BandwidthKBps = -1 }, "bandwidth_kbps"},
		{"negative timeout", func(f *DegradeLinks) { f.Timeout = faults.Duration(-time.Second) }, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := faults.MustNew("degrade-links").(*DegradeLinks)
			tc.set(f)
			ps := f.Check()
			require.Len(t, ps, 1, "%v", ps)
			require.Equal(t, tc.field, ps[0].Field)
		})
	}
	f.Latency, f.BandwidthKBps, f.Timeout = 0, 0, faults.Duration(time.Second)
	require.Empty(t, f.Check(), "a timeout alone degrades the links")
}

// linkTarget records what degrade-links asked of it.
type linkTarget struct {
	fakeName
	got      []LinkToxics
	restored int
	fail     error
}

type fakeName struct{}

func (fakeName) Name() string                  { return "zone-a" }
func (fakeName) Pause() error                  { return nil }
func (fakeName) Resume() error                 { return nil }
func (fakeName) Kill() error                   { return nil }
func (fakeName) Restart(context.Context) error { return nil }

func (l *linkTarget) DegradeLinks(_ context.Context, t LinkToxics) error {
	l.got = append(l.got, t)
	return l.fail
}

func (l *linkTarget) RestoreLinks(context.Context) error { l.restored++; return nil }

func TestDegradeLinksInjectRestores(t *testing.T) {
	f := &DegradeLinks{Latency: faults.Duration(300 * time.Millisecond), BandwidthKBps: 2}
	require.Error(t, f.Available(fakeName{}), "a target without links")
	l := &linkTarget{}
	require.NoError(t, f.Available(l))
	start := time.Now()
	require.NoError(t, f.Inject(context.Background(), l, 50*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	require.Equal(t, []LinkToxics{{Latency: 300 * time.Millisecond, BandwidthKBps: 2}}, l.got)
	require.Equal(t, 1, l.restored)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, f.Inject(ctx, l, time.Hour), "a cancelled run ends the fault at once")
	require.Equal(t, 2, l.restored, "and still restores the links")

	l.fail = errors.New("no proxy")
	require.ErrorContains(t, f.Inject(context.Background(), l, time.Hour), "no proxy")
	require.Equal(t, 3, l.restored, "a half-applied fault is undone")
}
