package ebscontrol

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/etcdlocal"
	"github.com/chaoslab/chaoslab/harness/images"
	"github.com/chaoslab/chaoslab/harness/lab"
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

// The claim transaction against a real etcd cluster: slots are taken
// from the nodes with most room, never below zero, and concurrent claims
// never take more slots than there are.
func TestIntegration_ClaimAgainstEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin, err := images.EtcdBinary(ctx, images.Options{})
	if err != nil {
		t.Skipf("no etcd binary: %v", err)
	}
	c, err := etcdlocal.Start(ctx, etcdlocal.Options{Members: 1, Binary: bin, Dir: t.TempDir()})
	require.NoError(t, err)
	defer c.Close()
	cli, err := c.Client()
	require.NoError(t, err)
	defer cli.Close()
	st := Store{Cli: cli, Prefix: "/test/ebs"}
	for n, free := range map[string]int{"a1": 2, "a2": 3, "a3": 1} {
		require.NoError(t, st.SetFree(ctx, "zone-a", n, free))
	}
	got, err := st.Claim(ctx, "zone-a", []string{"a1"}, 2, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"a2", "a3"}, got)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 10 {
		wg.Go(func() {
			_, err := st.Claim(ctx, "zone-a", nil, 1, 0)
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else {
				require.True(t, errors.Is(err, ErrNoSpace), err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 4, won, "2 left on a1 and 2 on a2")
	free, err := st.Free(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, free["zone-a"])
	_, err = st.Claim(ctx, "zone-a", nil, 1, 0)
	require.ErrorIs(t, err, ErrNoSpace)
	require.NoError(t, st.PutVolume(ctx, Volume{ID: "v1", Zone: "zone-a", Primary: "a1", Mirror: "a2", Epoch: 1}))
	v, err := st.Elect(ctx, "v1", "a1", "a3")
	require.NoError(t, err)
	require.Equal(t, Volume{ID: "v1", Zone: "zone-a", Primary: "a1", Mirror: "a3", Epoch: 2}, v)
	_, err = st.Elect(ctx, "v1", "a2", "a3")
	require.ErrorIs(t, err, ErrNotPrimary)
	require.NoError(t, st.Release(ctx, "zone-a", "a3"))
	free, err = st.Free(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, free["zone-a"])
}
