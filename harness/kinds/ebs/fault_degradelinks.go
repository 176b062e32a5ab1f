package ebs

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// LinkToxics are what a link fault puts on every link of its target, in
// both directions, as toxiproxy's toxics: latency (with jitter), a
// bandwidth cap, and a timeout that stops all data and closes each
// connection after it (0: none).
type LinkToxics struct {
	Latency       time.Duration
	Jitter        time.Duration
	BandwidthKBps int64
	Timeout       time.Duration
}

// LinkDegrader is a group whose links run through the harness's fault
// proxy (a zone of AWS-EBS-2011's storage nodes).
type LinkDegrader interface {
	faults.Target
	DegradeLinks(ctx context.Context, t LinkToxics) error
	RestoreLinks(ctx context.Context) error
}

// DegradeLinks moves a group's traffic onto a small, slow link for the
// duration, then restores the links: AWS-EBS-2011's trigger, a traffic
// shift that put a zone's primary traffic on its low-capacity replication
// network. The toxics act on connections already open as on new ones.
type DegradeLinks struct {
	// Latency is added to every packet's delivery.
	Latency faults.Duration `yaml:"latency"`
	// Jitter varies the latency by up to this much either way.
	Jitter faults.Duration `yaml:"jitter"`
	// BandwidthKBps caps each connection in each direction (0: no cap).
	BandwidthKBps int `yaml:"bandwidth_kbps"`
	// Timeout stops all data and closes each connection after this long
	// (0: no timeout toxic).
	Timeout faults.Duration `yaml:"timeout"`
}

func init() {
	faults.Register(func() faults.Fault {
		return &DegradeLinks{Latency: faults.Duration(200 * time.Millisecond), BandwidthKBps: 16}
	})
}

func (*DegradeLinks) Name() string { return "degrade-links" }

// Bounds of degrade-links.
const (
	// MaxLinkLatency: a latency longer than this is a partition; use timeout.
	MaxLinkLatency = time.Minute
	// MaxBandwidthKBps is more than loopback carries in a run's time.
	MaxBandwidthKBps = 1 << 30
)

// Check validates the parameters.
func (f *DegradeLinks) Check() []lab.Problem {
	var c lab.Checks
	c.Need(f.Latency >= 0 && f.Latency.D() <= MaxLinkLatency, "latency", "want 0 to %s (longer is a partition: use timeout), got %s", faults.Duration(MaxLinkLatency), f.Latency)
	c.Need(f.Jitter >= 0 && f.Jitter <= max(f.Latency, 0), "jitter", "want 0 to latency (%s), got %s", max(f.Latency, 0), f.Jitter)
	c.Need(f.BandwidthKBps >= 0 && f.BandwidthKBps <= MaxBandwidthKBps, "bandwidth_kbps", "want 0 (no cap) to %d, got %d", MaxBandwidthKBps, f.BandwidthKBps)
	c.Need(f.Timeout >= 0, "timeout", "want >= 0 (0: no timeout toxic), got %s", f.Timeout)
	c.Need(f.Latency > 0 || f.BandwidthKBps > 0 || f.Timeout > 0, "latency", "degrade-links needs latency, bandwidth_kbps or timeout: with none the links are unchanged")
	return c
}

func (*DegradeLinks) Available(t faults.Target) error {
	if _, ok := t.(LinkDegrader); !ok {
		return fmt.Errorf("degrade-links: target %s has no links through the fault proxy", faults.TargetName(t))
	}
	return nil
}

func (f *DegradeLinks) Inject(ctx context.Context, t faults.Target, d time.Duration) error {
	l := t.(LinkDegrader)
	tox := LinkToxics{Latency: f.Latency.D(), Jitter: f.Jitter.D(), BandwidthKBps: int64(f.BandwidthKBps), Timeout: f.Timeout.D()}
	err := l.DegradeLinks(ctx, tox)
	if err == nil {
		proveToxics(ctx, t)
		faults.Sleep(ctx, d)
	}
	if rerr := l.RestoreLinks(context.WithoutCancel(ctx)); rerr != nil {
		return fmt.Errorf("restore links: %w", rerr)
	}
	if err != nil {
		return fmt.Errorf("degrade links: %w", err)
	}
	return nil
}

// ToxicReader is a target that reads back the toxics on its links.
type ToxicReader interface {
	ToxicLinks() (links, toxics int)
}

func proveToxics(ctx context.Context, t faults.Target) {
	r, ok := t.(ToxicReader)
	if !ok {
		faults.Unverified(ctx, t, "%s's links cannot be read back", t.Name())
		return
	}
	links, toxics := r.ToxicLinks()
	if links == 0 || toxics == 0 {
		faults.Missed(ctx, t, "%d toxics on %d links, read back from the proxies", toxics, links)
		return
	}
	faults.Landed(ctx, t, "%d toxics on %d links, read back from the proxies", toxics, links)
}
