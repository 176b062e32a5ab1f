package lineproto

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	l, ok := Parse([]byte(`{"t": 1547802540123, "id": "client-01", "pending": 12, "fresh": true, "state": "has-session"}`))
	require.True(t, ok)
	require.Equal(t, int64(1547802540123), l.UnixMS)
	require.Equal(t, "client-01", l.ID)
	require.Equal(t, map[string]float64{"pending": 12, "fresh": 1}, l.Figures)
	require.Equal(t, map[string]string{"state": "has-session"}, l.Labels)
	l, ok = Parse([]byte(`{"prometheus": "http://127.0.0.1:9464/metrics"}`))
	require.True(t, ok)
	require.Equal(t, "http://127.0.0.1:9464/metrics", l.Prometheus)
	for _, bad := range []string{"", "starting up", "[1,2]", `{"t": `} {
		_, ok := Parse([]byte(bad))
		require.False(t, ok, bad)
	}
}

func TestParseText(t *testing.T) {
	got := parseText(strings.NewReader(`# HELP queue_depth pending requests
# TYPE queue_depth gauge
queue_depth 42
requests_total{path="/a"} 7
process_resident_memory_bytes 1.5e+07
`))
	require.Equal(t, map[string]float64{"queue_depth": 42, "process_resident_memory_bytes": 1.5e7}, got)
}
