package ebs

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebsnode"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// call is one create-volume call of the harness.
type call struct {
	T    float64 // when it was sent
	Zone string
	OK   bool // answered OK within create_slo
	Ms   float64
}

type seriesKey struct{ name, source string }

// recorder holds what the sampler and the load measured.
type recorder struct {
	mu       sync.Mutex
	points   map[seriesKey][]lab.Point
	units    map[string]string
	calls    []call
	searches map[string]int64 // by zone, last total
	timeouts map[string]int64
	live     [2]int // live, total volumes at the last sample
	stuck    map[string]int
	free     map[string]int
	busy     string
	cpTotal  int64
	// creates are the control plane's create-volume counts by zone at
	// each sample: how a user's callers are judged.
	creates []createCount
}

// createCount is the control plane's create-volume counts at a sample.
type createCount struct {
	T     float64
	Zones map[string][2]int64 // calls ended, answered OK within the SLO
}

func newRecorder(int) *recorder {
	return &recorder{points: map[seriesKey][]lab.Point{}, units: map[string]string{}, searches: map[string]int64{},
		timeouts: map[string]int64{}, stuck: map[string]int{}, free: map[string]int{}}
}

func (r *recorder) add(name, source, unit string, t, v float64) {
	k := seriesKey{name, source}
	r.points[k] = append(r.points[k], lab.Pt(t, v))
	r.units[name] = unit
}

// sample polls every node, the control plane and etcd once a second.
func (w *workload) sample(ctx context.Context) {
	lab.Every(ctx, time.Second, func() { w.sampleOnce(ctx) })
}

func (w *workload) sampleOnce(ctx context.Context) {
	now := w.env.Now()
	sts := w.nodeStatuses(ctx)
	var cs ebscontrol.Status
	cerr := w.getJSON(ctx, "http://"+w.apiAddr()+"/v1/status", &cs)
	fctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	free, ferr := w.store.Free(fctx)
	cancel()
	if ctx.Err() != nil {
		return // the run is ending: its programs are being stopped
	}
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	w.recordNodes(now, sts)
	if cerr == nil {
		w.recordControl(now, cs)
	}
	if ferr == nil {
		for z, f := range free {
			w.rec.add("ebs.free_slots", z, "slots", now, float64(f))
			w.rec.free[z] = f
		}
	}
}

// nodeStatuses asks every node at once; a node that does not answer is nil.
func (w *workload) nodeStatuses(ctx context.Context) []*ebsnode.Status {
	out := make([]*ebsnode.Status, len(w.nodes))
	var wg sync.WaitGroup
	for i, n := range w.nodes {
		addr := n.statusAddr()
		if addr == "" {
			continue
		}
		wg.Go(func() {
			var st ebsnode.Status
			if w.getJSON(ctx, "http://"+addr+"/status", &st) == nil {
				out[i] = &st
			}
		})
	}
	wg.Wait()
	return out
}

func (w *workload) getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := w.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// recordNodes: a node that does not answer counts all its volumes stuck.
func (w *workload) recordNodes(now float64, sts []*ebsnode.Status) {
	r := w.rec
	stuck, total, searches := map[string]int{}, map[string]int{}, map[string]int64{}
	live := 0
	for i, n := range w.nodes {
		total[n.zone] += len(n.vols)
		st := sts[i]
		if st == nil {
			stuck[n.zone] += len(n.vols)
			searches[n.zone] = -1 << 62 // unknown this second
			continue
		}
		stuck[n.zone] += st.Stuck
		live += st.Live
		searches[n.zone] += st.Searches
	}
	for z, tot := range total {
		r.add("ebs.stuck_share", z, "share", now, float64(stuck[z])/float64(tot))
		r.stuck[z] = stuck[z]
		if prev, ok := r.searches[z]; ok && searches[z] >= 0 && prev >= 0 {
			r.add("ebs.searches_per_s", z, "searches/s", now, float64(searches[z]-prev))
		}
		if searches[z] >= 0 {
			r.searches[z] = searches[z]
		}
	}
	r.live = [2]int{live, len(w.nodes) * w.s.VolumesPerNode}
}

func (w *workload) recordControl(now float64, cs ebscontrol.Status) {
	r := w.rec
	var busy []string
	for name, p := range cs.Pools {
		r.add("ebs.pool_busy", name, "share", now, float64(p.Busy)/float64(max(p.Workers, 1)))
		r.add("ebs.pool_waiting", name, "calls", now, float64(p.Waiting))
		busy = append(busy, fmt.Sprintf("%s %d/%d", name, p.Busy, p.Workers))
	}
	sort.Strings(busy)
	r.busy = strings.Join(busy, ", ")
	var total int64
	cc := createCount{T: now, Zones: map[string][2]int64{}}
	for z, c := range cs.Zones {
		cc.Zones[z] = [2]int64{c.Creates, c.CreatesFast}
		if prev, ok := r.timeouts[z]; ok {
			r.add("ebs.cp_timeouts_per_s", z, "calls/s", now, float64(c.Timeouts-prev))
		}
		r.timeouts[z] = c.Timeouts
		total += c.Timeouts
	}
	r.cpTotal = total
	r.creates = append(r.creates, cc)
}

// zonesCalling: the zones whose create-volume calls the control plane
// saw end between the last two samples.
func (r *recorder) zonesCalling() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.creates)
	if n < 2 {
		return 0
	}
	k := 0
	for z, c := range r.creates[n-1].Zones {
		if c[0] > r.creates[n-2].Zones[z][0] {
			k++
		}
	}
	return k
}

func (r *recorder) liveCount() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[0], r.live[1]
}

func (r *recorder) progress() []slog.Attr {
	r.mu.Lock()
	defer r.mu.Unlock()
	var stuck, free []string
	for _, z := range ZoneNames {
		if n, ok := r.stuck[z]; ok {
			stuck = append(stuck, fmt.Sprintf("%s %d", z, n))
			free = append(free, fmt.Sprintf("%s %d", z, r.free[z]))
		}
	}
	return []slog.Attr{slog.String("stuck", strings.Join(stuck, ", ")), slog.String("free", strings.Join(free, ", ")),
		slog.String("pool", r.busy), slog.Int64("cp_timeouts", r.cpTotal)}
}

// createLoad calls create-volume from a zone at create_rate, each within
// the caller's timeout, and deletes each volume created at once.
func (w *workload) createLoad(ctx context.Context, zone string) {
	every := time.Duration(float64(time.Second) / w.s.CreateRate)
	t := time.NewTicker(every)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	cli := ebscontrol.Client{Base: "http://" + w.apiAddr(), HTTP: w.http}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wg.Go(func() { w.createOne(ctx, cli, zone) })
	}
}

func (w *workload) createOne(ctx context.Context, cli ebscontrol.Client, zone string) {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, w.s.CreateTimeout.D())
	var v ebscontrol.Volume
	err := cli.Call(cctx, http.MethodPost, "/v1/volumes", ebscontrol.CreateRequest{Zone: zone}, &v)
	cancel()
	if ctx.Err() != nil {
		return // the end of the run, not the control plane
	}
	took := time.Since(start)
	c := call{T: w.env.Clock(start), Zone: zone, OK: err == nil && took <= w.s.CreateSLO.D(), Ms: float64(took.Microseconds()) / 1000}
	w.rec.mu.Lock()
	w.rec.calls = append(w.rec.calls, c)
	w.rec.mu.Unlock()
	if err == nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if derr := cli.Call(dctx, http.MethodDelete, "/v1/volumes/"+v.ID, nil, nil); derr != nil {
			w.env.Log.Warn("delete volume", "volume", v.ID, "err", derr)
		}
	}
}
