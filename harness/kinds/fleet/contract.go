package fleet

import (
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// Contract: a user's front-end server (IL-0384's fleet), in place of
// chaoslab's own.
func (s *Settings) Contract() lab.Contract {
	return lab.Contract{
		Role: "a front-end server of the fleet, one process (or container) per server under the thread limit; every server of the fleet runs your program",
		Env: []lab.EnvVar{
			{Name: "CHAOSLAB_ETCD_ENDPOINTS", What: "the etcd cluster, http://host:port,... (membership service and configuration store)"},
			{Name: "CHAOSLAB_FLEET_PREFIX", What: "the fleet's etcd prefix: the shard table is under PREFIX/shards/, members may register under PREFIX/members/"},
			{Name: "CHAOSLAB_SERVER_ID", What: "the server's name (fe-03); CHAOSLAB_SERVER_INDEX its number (3)"},
			{Name: "CHAOSLAB_LISTEN_HOST", What: "the address to listen on"},
			{Name: "CHAOSLAB_ADVERTISE_HOST", What: "the host its peers reach it at"},
			{Name: "CHAOSLAB_THREAD_LIMIT", What: "its OS thread limit (the cgroup's pids.max; on docker the container's pids limit)"},
			{Name: "CHAOSLAB_SHARDS", What: "the number of shards in the table"},
			{Name: "CHAOSLAB_INCARNATION", What: "0, then 1, 2... each time the server is restarted"},
			{Name: "CHAOSLAB_SEED", What: "a seed for its random choices, derived from the run's"},
		},
		Must: []string{
			"listen for HTTP and print one line {\"route\": \"HOST:PORT\"} on stdout once it does (the port is what counts)",
			"answer GET /route?key=K with 200 and {\"shard\": ID} of the shard owning K, once it can: the table's chunks in etcd are JSON arrays of {\"id\", \"lo\", \"hi\", \"cell\", \"epoch\"}, and K belongs to the shard with lo <= fnv1a32(K) <= hi; anything else (or a wrong shard) counts as not routed",
			"answer GET /status with JSON {\"ready\": true} once it routes (within health_grace of its start, or the health check removes it)",
			"find its peers (the fleet's other servers, some added during the run) and keep whatever it exchanges with them; how is up to it",
		},
		Measured: []string{
			"its OS threads (/proc/PID/status) against the thread limit, and the thread creations the kernel refused (pids.events)",
			"the share of the load generator's routing requests it answered with the right shard, per server and per second",
			"its health (GET /status), the health check's removals, its exits",
			"how long the fleet took to route again after the operator's restart",
		},
		Examples: []string{"examples/fleet-server-python/server.py (violated: a thread per peer)", "examples/fleet-server-python/server.py --pooled (held)"},
	}
}

// program describes the server program in a report.
func (s *Settings) program() string {
	if s.Program == nil {
		return "chaoslab's front-end server"
	}
	return "the user's: " + strings.TrimSpace(strings.Join(s.Program.Command, " ")+" "+s.Program.Image)
}

// userProgram is one incarnation of a user's server (Contract).
func (f *Fleet) userProgram(s *Server, inc int, listen, advertise string) lab.Program {
	c := f.cfg
	if advertise == "" {
		advertise = listen
	}
	if advertise == "auto" {
		advertise = s.ID // the server's alias on the run's network
	}
	return c.Program.Program(map[string]string{
		"CHAOSLAB_ETCD_ENDPOINTS": strings.Join(c.Etcd, ","), "CHAOSLAB_FLEET_PREFIX": c.Prefix,
		"CHAOSLAB_SERVER_ID": s.ID, "CHAOSLAB_SERVER_INDEX": strconv.Itoa(s.Index),
		"CHAOSLAB_LISTEN_HOST": listen, "CHAOSLAB_ADVERTISE_HOST": advertise,
		"CHAOSLAB_THREAD_LIMIT": strconv.Itoa(c.ThreadLimit), "CHAOSLAB_SHARDS": strconv.Itoa(c.Shards),
		"CHAOSLAB_INCARNATION": strconv.Itoa(inc), "CHAOSLAB_SEED": strconv.FormatUint(f.seed(s, inc), 10),
	})
}
