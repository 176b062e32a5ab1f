package consulload

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProbe measures the agent's peak charged memory against load size
// (CONSULLOAD_PROBE=1; CONSULLOAD_STEPS="lookers:watchers,..."). It
// restarts the agent between steps so that each starts from idle.
func TestProbe(t *testing.T) {
	if os.Getenv("CONSULLOAD_PROBE") == "" {
		t.Skip("a measurement, not a test: CONSULLOAD_PROBE=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l := startLab(t, ctx, 4<<30, os.Getenv("CONSULLOAD_GOMEMLIMIT"))
	svc := NewService()
	if v, _ := strconv.Atoi(os.Getenv("CONSULLOAD_INSTANCES")); v > 0 {
		svc.Instances = v
	}
	if v, err := strconv.Atoi(os.Getenv("CONSULLOAD_OUTPUT")); err == nil {
		svc.OutputBytes = v
	}
	began := time.Now()
	if err := Register(ctx, l.srv, svc); err != nil {
		t.Fatal(err)
	}
	t.Logf("registered %d instances in %v", svc.Instances, time.Since(began).Round(time.Millisecond))
	steps := os.Getenv("CONSULLOAD_STEPS")
	if steps == "" {
		steps = "0:0,10:0,50:0,100:0,200:0,0:50,0:200"
	}
	dur, _ := time.ParseDuration(os.Getenv("CONSULLOAD_STEP"))
	if dur == 0 {
		dur = 10 * time.Second
	}
	flap, _ := time.ParseDuration(os.Getenv("CONSULLOAD_FLAP"))
	if flap == 0 {
		flap = time.Second
	}
	for _, st := range strings.Split(steps, ",") {
		a, b, _ := strings.Cut(st, ":")
		lookers, _ := strconv.Atoi(a)
		watchers, _ := strconv.Atoi(b)
		if err := l.agent.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		sctx, scancel := context.WithTimeout(ctx, dur)
		rec := make(chan []Sample)
		go func() { rec <- Record(sctx, l.proc, 50*time.Millisecond) }()
		flaps := make(chan int)
		go func() { n, _ := Flap(sctx, l.srv, svc, flap); flaps <- n }()
		cnt, err := Run(sctx, Load{DNSAddr: l.dnsAddr(), HTTPAddr: l.httpAddr(), Service: svc.Name,
			Lookers: lookers, TCP: os.Getenv("CONSULLOAD_UDP") == "", Watchers: watchers})
		scancel()
		if err != nil {
			t.Fatal(err)
		}
		samples := <-rec
		nflaps := <-flaps
		charged, rss, ooms := Peak(samples)
		t.Logf("step lookers=%d watchers=%d: idle charged %d MiB; peak charged %d MiB rss %d MiB; oom %d; flaps %d; %v",
			lookers, watchers, samples[0].ChargedBytes>>20, charged>>20, rss>>20, ooms, nflaps, cnt)
	}
}
