package ebscontrol_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chaoslab/chaoslab/harness/kinds/ebs/ebscontrol"
	"github.com/chaoslab/chaoslab/harness/lab"
	_ "github.com/chaoslab/chaoslab/harness/placement/local"
	"github.com/chaoslab/chaoslab/harness/systems/etcd"
	"github.com/chaoslab/chaoslab/harness/systemtest"
)

// The claim transaction against a real etcd cluster: slots are taken
// from the nodes with most room, never below zero, and concurrent claims
// never take more slots than there are.
func TestIntegration_ClaimAgainstEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, _ := systemtest.StartSystem(t, ctx, "etcd", "local", func(s lab.Settings) { s.(*etcd.Topology).Members = 1 })
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(lab.FromHost), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	st := ebscontrol.Store{Cli: cli, Prefix: "/test/ebs"}
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
				require.True(t, errors.Is(err, ebscontrol.ErrNoSpace), err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 4, won, "2 left on a1 and 2 on a2")
	free, err := st.Free(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, free["zone-a"])
	_, err = st.Claim(ctx, "zone-a", nil, 1, 0)
	require.ErrorIs(t, err, ebscontrol.ErrNoSpace)
	require.NoError(t, st.PutVolume(ctx, ebscontrol.Volume{ID: "v1", Zone: "zone-a", Primary: "a1", Mirror: "a2", Epoch: 1}))
	v, err := st.Elect(ctx, "v1", "a1", "a3")
	require.NoError(t, err)
	require.Equal(t, ebscontrol.Volume{ID: "v1", Zone: "zone-a", Primary: "a1", Mirror: "a3", Epoch: 2}, v)
	_, err = st.Elect(ctx, "v1", "a2", "a3")
	require.ErrorIs(t, err, ebscontrol.ErrNotPrimary)
	require.NoError(t, st.Release(ctx, "zone-a", "a3"))
	free, err = st.Free(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, free["zone-a"])
}
