package consul

import (
	"testing"

	"github.com/hashicorp/consul/api"
	"github.com/stretchr/testify/require"
)

// Each finished interval is counted once, whatever the number of samples
// that see it; only the request metrics count.
func TestRequestCount(t *testing.T) {
	var r requestCount
	iv := func(ts string, rpc, http, dns int, other int) api.MetricsInfo {
		return api.MetricsInfo{Timestamp: ts,
			Counters: []api.SampledValue{{Name: "consul.rpc.request", Count: rpc}, {Name: "consul.raft.apply", Count: other}},
			Samples:  []api.SampledValue{{Name: "consul.api.http", Count: http}, {Name: "consul.dns.domain_query", Count: dns}}}
	}
	require.Equal(t, 0.0, r.add(api.MetricsInfo{}))
	require.Equal(t, 6.0, r.add(iv("10:00:00", 1, 2, 3, 50)))
	require.Equal(t, 6.0, r.add(iv("10:00:00", 1, 2, 3, 50)), "the same interval again")
	require.Equal(t, 16.0, r.add(iv("10:00:10", 0, 10, 0, 50)))
}
