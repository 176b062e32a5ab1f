package consul

import (
	"sync"

	"github.com/hashicorp/consul/api"
)

// requestMetrics are what a node counts of the requests it received, in
// its in-memory telemetry: RPCs from other nodes (a counter, servers
// only), HTTP API calls and DNS queries (timers: their count).
var requestMetrics = map[string]bool{
	"consul.rpc.request":      true,
	"consul.api.http":         true,
	"consul.dns.domain_query": true,
	"consul.dns.ptr_query":    true,
}

// requestCount makes a cumulative count of a node's requests out of
// /v1/agent/metrics, which shows the last finished 10 s interval only:
// each interval is added once, by its timestamp. An interval the sampler
// did not see (the node paused or unreachable for over 10 s) is missed;
// a restarted node's new intervals add on to the count.
type requestCount struct {
	mu    sync.Mutex
	last  string
	total float64
}

func (r *requestCount) add(info api.MetricsInfo) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if info.Timestamp == "" || info.Timestamp == r.last {
		return r.total
	}
	r.last = info.Timestamp
	for _, vs := range [][]api.SampledValue{info.Counters, info.Samples} {
		for _, v := range vs {
			if requestMetrics[v.Name] {
				r.total += float64(v.Count)
			}
		}
	}
	return r.total
}
