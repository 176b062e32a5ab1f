package gameday

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/journal"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/runner"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServeMetricsFollowsEveryRun: a run's exporter (chaoslab run
// --metrics-addr) serves the newest samples of each run it is given, one
// after the other (--repeat), and nothing else.
func TestServeMetricsFollowsEveryRun(t *testing.T) {
	_, err := ServeMetrics("0.0.0.0:0", NewHub())
	require.ErrorContains(t, err, "not a loopback address")
	_, err = ServeMetrics("localhost", NewHub())
	require.ErrorContains(t, err, "missing port")

	h := NewHub()
	exp, err := ServeMetrics("127.0.0.1:0", h)
	require.NoError(t, err)
	defer exp.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var o runner.Options
	settle := Follow(ctx, &o, h)
	code, body := get(t, exp.URL())
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, body, "no run yet, no series")

	for i, v := range []float64{42, 7} {
		dir := t.TempDir()
		w, err := journal.Create(dir)
		require.NoError(t, err)
		o.OnDir(dir)
		w.Add(journal.Record{Kind: journal.KindPoints, Variant: "vulnerable", Series: []lab.Series{
			{Name: "server.outstanding_requests", Source: "zk1", Unit: "requests", Points: []lab.Point{lab.Pt(1, 3), lab.Pt(float64(2+i), v)}}}}, true)
		w.Add(journal.Record{Kind: journal.KindEnd}, true)
		settle()
		_, body = get(t, exp.URL())
		require.Contains(t, body, "# TYPE chaoslab_server_outstanding_requests gauge")
		require.Contains(t, body, `chaoslab_server_outstanding_requests{variant="vulnerable",source="zk1"} `+map[float64]string{42: "42", 7: "7"}[v])
	}
	code, _ = get(t, "http://"+exp.ln.Addr().String()+"/events")
	require.Equal(t, http.StatusNotFound, code, "the exporter serves /metrics alone")
}

// TestDashboardMetricsNeedNoToken: the dashboard's /metrics is read by a
// scraper without the run's token, like its page; events need the token.
func TestDashboardMetricsNeedNoToken(t *testing.T) {
	h := NewHub()
	h.keep("mitigated", []lab.Series{{Name: "client.connected", Source: "c1", Points: []lab.Point{lab.Pt(1, 1)}}})
	s, err := Listen("127.0.0.1", 0, h, NewControls(nil))
	require.NoError(t, err)
	defer s.Close(context.Background())
	code, body := get(t, "http://"+s.Addr()+MetricsPath)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `chaoslab_client_connected{variant="mitigated",source="c1"} 1`)
	code, _ = get(t, "http://"+s.Addr()+"/state")
	require.Equal(t, http.StatusForbidden, code)
}

func TestMetricName(t *testing.T) {
	require.Equal(t, "chaoslab_server_outstanding_requests", MetricName("server.outstanding_requests"))
	require.Equal(t, "chaoslab_client_x_y_z", MetricName("client.x-y/z"))
}

// TestWireWritesInfoAndFollows: a game day's run folder gets InfoFile
// while it lasts, the dashboard's URL is told, and the journal reaches
// the hub, hence the dashboard's /metrics.
func TestWireWritesInfoAndFollows(t *testing.T) {
	h := NewHub()
	s, err := Listen("127.0.0.1", 0, h, NewControls(nil))
	require.NoError(t, err)
	defer s.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var o runner.Options
	var told string
	settle := Wire(ctx, &o, s, func(url string) { told = url })
	require.Equal(t, s.Controls, o.Steer)

	dir := t.TempDir()
	w, err := journal.Create(dir)
	require.NoError(t, err)
	o.OnDir(dir)
	require.Equal(t, s.URL(), told)
	require.FileExists(t, filepath.Join(dir, InfoFile))
	w.Add(journal.Record{Kind: journal.KindPoints, Variant: "vulnerable", Series: []lab.Series{
		{Name: "server.connections", Source: "zk2", Points: []lab.Point{lab.Pt(1, 5)}}}}, true)
	w.Add(journal.Record{Kind: journal.KindEnd}, true)
	settle()
	require.NoFileExists(t, filepath.Join(dir, InfoFile))
	_, body := get(t, "http://"+s.Addr()+MetricsPath)
	require.Contains(t, body, `chaoslab_server_connections{variant="vulnerable",source="zk2"} 5`)
}
