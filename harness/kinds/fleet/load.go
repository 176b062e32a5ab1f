package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
)

// Load sends routing requests across the fleet at a fixed rate (open loop:
// a slow fleet does not slow the senders), round robin over the servers
// that are part of the fleet, and records per server and per second the
// attempts, successes and latencies.
type Load struct {
	Fleet *Fleet
	// Rate is requests per second over the whole fleet.
	Rate float64
	// Workers bounds requests in flight.
	Workers int
	Timeout time.Duration
	Seed    uint64
	// Table is the shard table in the store: an answer naming another
	// shard than the key's is not routed (checked when set).
	Table frontend.Table

	mu      sync.Mutex
	buckets map[bucketKey]*Bucket
	t0      time.Time
}

type bucketKey struct {
	server string
	sec    int
}

// Bucket is one second of one server's requests.
type Bucket struct {
	Attempts, OK int
	LatencyMS    []float64 // of the successful requests
	Errors       map[string]int
}

// Run sends until ctx ends.
func (l *Load) Run(ctx context.Context) {
	if l.Rate <= 0 {
		return
	}
	if l.Workers <= 0 {
		l.Workers = 32
	}
	if l.Timeout <= 0 {
		l.Timeout = time.Second
	}
	l.mu.Lock()
	l.buckets = map[bucketKey]*Bucket{}
	l.mu.Unlock()
	client := &http.Client{Timeout: l.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true}}
	r := rand.New(rand.NewPCG(l.Seed, 0x384))
	sem := make(chan struct{}, l.Workers)
	every := time.Duration(float64(time.Second) / l.Rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	next := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		servers := l.Fleet.Active()
		if len(servers) == 0 {
			continue
		}
		s := servers[next%len(servers)]
		next++
		key := fmt.Sprintf("stream-%d/partition-%d", r.IntN(1000), r.IntN(1<<20))
		now := time.Now()
		select {
		case sem <- struct{}{}:
		default:
			l.record(s.ID, now, false, 0, "load generator saturated")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			route := s.Route()
			if route == "" {
				l.record(s.ID, now, false, 0, "server down")
				return
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+route+"/route?key="+key, nil)
			resp, err := client.Do(req)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				l.record(s.ID, now, false, 0, "no answer")
				return
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				l.record(s.ID, now, false, 0, fmt.Sprintf("HTTP %d", resp.StatusCode))
				return
			}
			if why := l.wrongShard(key, body); why != "" {
				l.record(s.ID, now, false, 0, why)
				return
			}
			l.record(s.ID, now, true, float64(time.Since(now).Microseconds())/1000, "")
		}()
	}
}

// wrongShard says why an answer to key does not route it ("" when it
// does, or when there is no table to check against).
func (l *Load) wrongShard(key string, body []byte) string {
	if len(l.Table) == 0 {
		return ""
	}
	var a struct {
		Shard *int `json:"shard"`
	}
	if json.Unmarshal(body, &a) != nil || a.Shard == nil {
		return "answer without a shard"
	}
	if want, _ := l.Table.Route(key); *a.Shard != want.ID {
		return "wrong shard"
	}
	return ""
}

// SetStart fixes the clock the buckets are counted on.
func (l *Load) SetStart(t0 time.Time) { l.t0 = t0 }

func (l *Load) record(server string, at time.Time, ok bool, ms float64, errKind string) {
	k := bucketKey{server, int(at.Sub(l.t0).Seconds())}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[k]
	if b == nil {
		b = &Bucket{Errors: map[string]int{}}
		l.buckets[k] = b
	}
	b.Attempts++
	if ok {
		b.OK++
		b.LatencyMS = append(b.LatencyMS, ms)
	} else {
		b.Errors[errKind]++
	}
}

// Second is one second of requests, per server and in total.
type Second struct {
	Sec      int
	Servers  map[string]*Bucket
	Attempts int
	OK       int
	P99MS    float64
}

// Seconds returns the recorded seconds in order.
func (l *Load) Seconds() []Second {
	l.mu.Lock()
	defer l.mu.Unlock()
	by := map[int]*Second{}
	for k, b := range l.buckets {
		s := by[k.sec]
		if s == nil {
			s = &Second{Sec: k.sec, Servers: map[string]*Bucket{}}
			by[k.sec] = s
		}
		s.Servers[k.server] = b
		s.Attempts += b.Attempts
		s.OK += b.OK
	}
	var out []Second
	for _, s := range by {
		var lat []float64
		for _, b := range s.Servers {
			lat = append(lat, b.LatencyMS...)
		}
		if len(lat) > 0 {
			sort.Float64s(lat)
			s.P99MS = lat[min(len(lat)-1, int(float64(len(lat))*0.99))]
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sec < out[j].Sec })
	return out
}
