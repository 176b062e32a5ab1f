package pgconsul

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/dblb/pgcluster"
)

// failingLagger is a cluster whose primary does not answer.
type failingLagger struct{}

func (failingLagger) Replicas() []*pgcluster.Server { return nil }

func (failingLagger) Lags(context.Context) ([]pgcluster.Lag, error) {
	return nil, errors.New("read replication: timeout")
}

// A stalled primary keeps each replica's last judgement: the checks are
// refreshed with it, not left to expire.
func TestUpdateKeepsLastJudgementWhenPrimaryStalls(t *testing.T) {
	var mu sync.Mutex
	updates := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v1/agent/check/update/"); ok {
			var body struct{ Status string }
			_ = jsonDecode(r, &body)
			mu.Lock()
			updates[id] = body.Status
			mu.Unlock()
		}
	}))
	defer srv.Close()
	cli, err := api.NewClient(&api.Config{Address: strings.TrimPrefix(srv.URL, "http://")})
	require.NoError(t, err)
	r := &Registration{agent: cli, c: failingLagger{}, status: []Status{
		{Replica: "replica1", ID: "patroni-replica1", Status: api.HealthPassing, Output: "caught up"},
		{Replica: "replica2", ID: "patroni-replica2", Status: api.HealthCritical, Output: "behind"},
	}}
	err = r.update(context.Background())
	require.ErrorContains(t, err, "timeout")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]string{"patroni-replica1-lag": api.HealthPassing, "patroni-replica2-lag": api.HealthCritical}, updates)
	require.Equal(t, api.HealthPassing, r.Statuses()[0].Status)
}

func jsonDecode(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }
