package ebscontrol

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
)

func TestChooseMostFreeNotExcludedAboveReserve(t *testing.T) {
	nodes := []nodeFree{{"a1", 3, 1}, {"a2", 5, 2}, {"a3", 0, 3}, {"a4", 5, 4}}
	got := choose(nodes, []string{"a4"}, 2, 0)
	require.Equal(t, []string{"a2", "a1"}, names(got))
	require.Empty(t, choose(nodes, []string{"a1", "a2", "a4"}, 1, 0), "a3 has no free slot")
	require.Equal(t, []string{"a2"}, names(choose(nodes, []string{"a4"}, 2, 3)), "a1's 3 slots are all reserve")
}

func names(ns []nodeFree) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.node)
	}
	return out
}

func TestServiceCheck(t *testing.T) {
	s := DefaultService()
	require.Empty(t, s.Check(3))
	s.Pool, s.PoolWorkers = PerZone, 2
	require.Len(t, s.Check(3), 1)
	require.Equal(t, "pool_workers", s.Check(3)[0].Field)
	s = DefaultService()
	s.Pool, s.SpacePoll, s.RequestTimeout = "regional", lab.Duration(time.Second), lab.Duration(500*time.Millisecond)
	fields := map[string]bool{}
	for _, p := range s.Check(3) {
		fields[p.Field] = true
	}
	require.Equal(t, map[string]bool{"pool": true, "space_poll": true}, fields)
}

// A shared pool held by one zone's slow calls times out the other zones'
// calls; a pool per zone does not.
func TestPoolsSharedAndPerZone(t *testing.T) {
	for _, tc := range []struct {
		pool     string
		otherOK  bool
		timeouts int64
	}{{Shared, false, 1}, {PerZone, true, 0}} {
		t.Run(tc.pool, func(t *testing.T) {
			svc := Service{Pool: tc.pool, PoolWorkers: 2, RequestTimeout: lab.Duration(300 * time.Millisecond), SpacePoll: lab.Duration(10 * time.Millisecond)}
			s := NewServer(Config{Service: svc, Zones: []string{"zone-a", "zone-b"}}, Store{})
			release := make(chan struct{})
			var wg sync.WaitGroup
			hold := func(context.Context) (any, error) { <-release; return nil, nil }
			for range 2 { // zone-a takes both workers of a shared pool
				wg.Go(func() {
					s.pooled(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil), "zone-a", hold)
				})
			}
			time.Sleep(50 * time.Millisecond)
			rec := httptest.NewRecorder()
			s.pooled(rec, httptest.NewRequest(http.MethodPost, "/", nil), "zone-b", func(context.Context) (any, error) { return "ok", nil })
			require.Equal(t, tc.otherOK, rec.Code == http.StatusOK, rec.Body.String())
			require.Equal(t, tc.timeouts, s.zones["zone-b"].queueTimeouts.Load())
			close(release)
			wg.Wait()
		})
	}
}

// The control plane counts each create-volume call as it ends: fast when
// answered 200 within the SLO, abandoned when its caller hung up first.
func TestCreateCountedAtTheControlPlane(t *testing.T) {
	c := &counters{}
	c.countCreate(http.StatusOK, true, false)
	c.countCreate(http.StatusOK, false, false)
	c.countCreate(http.StatusGatewayTimeout, true, false)
	c.countCreate(http.StatusGatewayTimeout, true, true)
	require.Equal(t, [3]int64{4, 1, 1}, [3]int64{c.creates.Load(), c.createsFast.Load(), c.createsAbandoned.Load()})

	// A caller that hangs up frees its worker: a zone without space holds
	// one worker only while its caller waits.
	svc := Service{Pool: Shared, PoolWorkers: 1, RequestTimeout: lab.Duration(5 * time.Second), SpacePoll: lab.Duration(10 * time.Millisecond)}
	s := NewServer(Config{Service: svc, Zones: []string{"zone-a"}, CreateSLO: time.Second}, Store{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, "/", nil).WithContext(ctx)
	start := time.Now()
	s.pooled(httptest.NewRecorder(), req, "zone-a", func(ctx context.Context) (any, error) { <-ctx.Done(); return nil, ctx.Err() })
	require.Less(t, time.Since(start), time.Second, "the worker is freed when the caller hangs up")
	require.Empty(t, s.pools["zone-a"].sem)
}
