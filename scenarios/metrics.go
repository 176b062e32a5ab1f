package scenarios

import "sort"

// Metrics are the measurements a run derives from its series; hypotheses,
// comparisons and evidence name them.
var Metrics = map[string]string{
	"servers.outstanding_requests.max":            "peak of zk_outstanding_requests over every server and sample (mntr)",
	"servers.outstanding_requests.max_from_fault": "peak of zk_outstanding_requests over every server from the start of the first fault to the end of the run",
	"servers.avg_latency_ms.max":                  "peak of zk_avg_latency over every server and sample, in ms (mntr)",
	"servers.connections.min_after_fault":         "lowest total of zk_num_alive_connections after the last fault ended",
	"clients.oom_kills":                           "client processes killed by the kernel's OOM killer (cgroup counters or kernel log)",
	"clients.deaths":                              "client processes that exited before the end of the run, for any reason",
	"clients.rss_mb.max":                          "peak resident memory of any client process, in MiB",
	"clients.pending.max":                         "peak of requests in flight plus queued in any one client",
	"clients.pending.max_from_fault":              "peak of requests in flight plus queued in any one client, from the start of the first fault to the end of the run",
	"clients.requests.total":                      "requests completed by all clients",
	"clients.reconnects.total":                    "reconnections (new TCP connection with a session) over all clients",
	"clients.refreshes.total":                     "full or paced tree walks started over all clients",
	"clients.stale_s.max":                         "peak staleness of any mirror after warm-up, in seconds",
	"clients.fresh_after_fault_s":                 "seconds from the end of the last fault until every client's mirror is fresh and stays fresh (+Inf when that never happens in the run)",

	// IL-0384: the front-end fleet.
	"fleet.routing_success.before_trigger":           "share of routing requests answered with a route in the 10 s before the capacity addition",
	"fleet.routing_success.during_trigger":           "share of routing requests answered with a route from the capacity addition until its removal",
	"fleet.routing_success.min_server_after_trigger": "lowest share of routing requests answered by any server of the original fleet, from the end of the learning spread after the capacity addition until its removal",
	"fleet.routing_success.max_server_after_trigger": "highest share of routing requests answered by any server of the original fleet over the same window (below the bound: every server failed)",
	"fleet.routing_success.end":                      "share of routing requests answered with a route in the last 10 s of the run",
	"fleet.threads.before_trigger_max":               "most OS threads of any server before the capacity addition (/proc/<pid>/status)",
	"fleet.threads.max":                              "most OS threads of any server over the run",
	"fleet.threads.max_ratio_to_limit":               "fleet.threads.max divided by the thread limit (the cgroup's pids.max); 1 means a server reached the limit",
	"fleet.thread_limit_exits":                       "server processes the Go runtime aborted because the OS refused a new thread",
	"fleet.pids_limit_refusals":                      "thread creations the kernel refused at pids.max, over every server (pids.events max)",
	"fleet.health_removals":                          "servers removed by the health check (no answer, or shard-map still incomplete after the grace period)",
	"fleet.recovery_after_restart_s":                 "seconds from the start of the operator's restart until every server of the fleet routes and every second after has at least 99% of requests routed (+Inf when that never happens in the run)",
}

// IsMetric reports whether name is a known metric.
func IsMetric(name string) bool { _, ok := Metrics[name]; return ok }

// MetricNames returns the known metric names, sorted.
func MetricNames() []string {
	var out []string
	for k := range Metrics {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
