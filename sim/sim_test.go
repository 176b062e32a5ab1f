package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Events run in time order; events at the same time in the order they
// were scheduled; the clock ends at the horizon.
func TestOrderAndClock(t *testing.T) {
	s := New(1)
	var got []string
	rec := func(name string) Handler {
		return HandlerFunc(func(s *Sim, arg int64) { got = append(got, fmt.Sprintf("%s@%g/%d", name, s.Now(), arg)) })
	}
	s.Schedule(2, rec("c"), 3)
	s.Schedule(1, rec("a"), 1)
	s.Schedule(1, rec("b"), 2)
	s.Schedule(0, HandlerFunc(func(s *Sim, _ int64) { s.Schedule(1, rec("d"), 4) }), 0)
	s.Schedule(7, rec("late"), 5)
	s.Run(5)
	want := []string{"a@1/1", "b@1/2", "d@1/4", "c@2/3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s.Now() != 5 || s.Pending() != 1 || s.Events() != 5 {
		t.Fatalf("now %g pending %d events %d", s.Now(), s.Pending(), s.Events())
	}
	s.Run(math.Inf(1))
	if s.Now() != 7 || len(got) != 5 {
		t.Fatalf("now %g, %v", s.Now(), got)
	}
}

// Many random events come out sorted (the 4-ary heap).
func TestHeapSorts(t *testing.T) {
	s := New(7)
	last := -1.0
	ok := true
	h := HandlerFunc(func(s *Sim, _ int64) {
		if s.Now() < last {
			ok = false
		}
		last = s.Now()
	})
	for range 100000 {
		s.Schedule(s.Uniform(0, 1000), h, 0)
	}
	s.Run(math.Inf(1))
	if !ok || s.Events() != 100000 {
		t.Fatalf("out of order or lost: %d events", s.Events())
	}
}

var moderate = RetryQueue{Rate: 90, Workers: 10, ServiceMean: 0.1, Timeout: 0.5, Retries: 3,
	Backoff: Backoff{Base: 0.1, Factor: 2, Max: 2, Jitter: 0.5}, Horizon: 2000, Seed: 1}

// The same seed gives the same run; another seed a different one.
func TestDeterministic(t *testing.T) {
	a, b := moderate.Run(), moderate.Run()
	if a != b {
		t.Fatalf("same seed, different runs:\n%+v\n%+v", a, b)
	}
	m := moderate
	m.Seed = 2
	if c := m.Run(); c == a {
		t.Fatal("another seed gave the same run")
	}
}

// Below saturation the station is an M/M/c queue: utilisation is
// rate*service/workers, every request is served, and timeouts are rare.
func TestRetryQueueMatchesQueueingTheory(t *testing.T) {
	r := moderate.Run()
	rho := moderate.Rate * moderate.ServiceMean / float64(moderate.Workers)
	if math.Abs(r.Utilisation-rho) > 0.02 {
		t.Fatalf("utilisation %.3f, want %.3f", r.Utilisation, rho)
	}
	if float64(r.Served) < 0.99*float64(r.Arrivals) || r.GaveUp > r.Arrivals/1000 {
		t.Fatalf("%+v", r)
	}
	if math.Abs(float64(r.Arrivals)/moderate.Horizon-moderate.Rate) > 1.5 {
		t.Fatalf("arrival rate %.2f", float64(r.Arrivals)/moderate.Horizon)
	}
}

// Past saturation, retries without back-off multiply the attempts: the
// amplification behind a retry storm.
func TestRetryAmplification(t *testing.T) {
	m := moderate
	m.Rate, m.Horizon = 110, 300
	m.Backoff = Backoff{}
	r := m.Run()
	if amp := float64(r.Attempts) / float64(r.Arrivals); amp < 1.5 {
		t.Fatalf("attempts per request %.2f, want >= 1.5 in overload: %+v", amp, r)
	}
	if r.Utilisation < 0.99 {
		t.Fatalf("utilisation %.3f in overload", r.Utilisation)
	}
}

func simpyAvailable(tb testing.TB) string {
	tb.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import SimPy.Simulation").Run(); err != nil {
		tb.Skip("no SimPy (Debian: apt-get install python3-simpy)")
	}
	return py
}

type simpyResult struct {
	Arrivals, Attempts, Served uint64
	TimedOut                   uint64  `json:"timed_out"`
	GaveUp                     uint64  `json:"gave_up"`
	WallS                      float64 `json:"wall_s"`
}

func runSimPy(tb testing.TB, py string, m RetryQueue) simpyResult {
	tb.Helper()
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	out, err := exec.Command(py, "testdata/retryqueue_simpy.py", f(m.Rate), strconv.Itoa(m.Workers), f(m.ServiceMean), f(m.Timeout),
		strconv.Itoa(m.Retries), f(m.Backoff.Base), f(m.Backoff.Factor), f(m.Backoff.Max), f(m.Backoff.Jitter), f(m.Horizon),
		strconv.FormatUint(m.Seed, 10)).Output()
	if err != nil {
		tb.Fatalf("simpy: %v", err)
	}
	var r simpyResult
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("simpy output %q: %v", out, err)
	}
	return r
}

// The engine and SimPy agree on the reference model. Their random streams
// differ, so the figures are compared as statistics: below saturation the
// served requests of one run within 3%; past it, where a run's retries
// depend strongly on its early queue, the mean attempts per request over
// three seeds within 10%.
func TestAgreesWithSimPy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs SimPy")
	}
	py := simpyAvailable(t)
	m := moderate
	m.Rate, m.Horizon = 80, 200
	g, p := m.Run(), runSimPy(t, py, m)
	t.Logf("rate 80: go %+v; simpy %+v", g, p)
	if rel := math.Abs(float64(g.Served)-float64(p.Served)) / float64(p.Served); rel > 0.03 {
		t.Errorf("rate 80: served differs by %.1f%%: go %d, simpy %d", 100*rel, g.Served, p.Served)
	}
	var ga, pa float64
	for seed := uint64(1); seed <= 3; seed++ {
		m.Rate, m.Seed = 105, seed
		g, p := m.Run(), runSimPy(t, py, m)
		ga += float64(g.Attempts) / float64(g.Arrivals) / 3
		pa += float64(p.Attempts) / float64(p.Arrivals) / 3
	}
	t.Logf("rate 105: attempts per request: go %.3f, simpy %.3f", ga, pa)
	if rel := math.Abs(ga-pa) / pa; rel > 0.10 || ga < 1.2 {
		t.Errorf("rate 105: attempts per request differ by %.1f%%: go %.3f, simpy %.3f", 100*rel, ga, pa)
	}
}

// BenchmarkEngine is the engine's events per second on the reference model.
func BenchmarkEngine(b *testing.B) {
	m := moderate
	m.Horizon = 20000
	var events uint64
	start := time.Now()
	for b.Loop() {
		events += m.Run().Events
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkVsSimPy runs the same reference model for the same virtual time
// in the engine and in SimPy, side by side, and prints both wall times and
// their ratio.
func BenchmarkVsSimPy(b *testing.B) {
	py := simpyAvailable(b)
	m := moderate
	m.Horizon = 2000
	for b.Loop() {
		start := time.Now()
		g := m.Run()
		goWall := time.Since(start).Seconds()
		p := runSimPy(b, py, m)
		b.ReportMetric(float64(g.Events)/goWall, "go-events/s")
		b.ReportMetric(goWall, "go-s")
		b.ReportMetric(p.WallS, "simpy-s")
		b.ReportMetric(p.WallS/goWall, "speedup")
		if os.Getenv("SIM_BENCH_VERBOSE") != "" {
			b.Logf("go %+v in %.3fs; simpy %+v", g, goWall, p)
		}
	}
}
