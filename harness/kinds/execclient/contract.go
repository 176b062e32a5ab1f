package execclient

import "github.com/chaoslab/chaoslab/harness/lab"

// Contract: any program against any system.
func (s *Settings) Contract() lab.Contract {
	return lab.Contract{
		Role: "any program against the scenario's system, one process (or container) per instance",
		Env: []lab.EnvVar{
			{Name: "CHAOSLAB_ZK_CONNECT, CHAOSLAB_ETCD_ENDPOINTS or CHAOSLAB_CONSUL_HTTP_ADDR", What: "the system's endpoints"},
			{Name: "CHAOSLAB_CLIENT_ID", What: "the instance's name (client-03)"},
			{Name: "CHAOSLAB_INCARNATION", What: "0, then 1, 2... each time the instance is restarted"},
			{Name: "CHAOSLAB_SEED", What: "a seed for its random choices, derived from the run's"},
			{Name: "CHAOSLAB_MEMORY_LIMIT_MB", What: "its kernel-enforced memory limit (0: none)"},
			{Name: "CHAOSLAB_<NAME>", What: "each of the scenario's settings"},
		},
		Must: []string{
			"use the system as it would in production, and keep running (restarted when restart is set)",
			"optionally print figures, one JSON object a line (client.<name> series), or {\"prometheus\": URL} once to be scraped",
			"when the scenario names a ready_figure, print it above 0 once ready (the warm-up waits for it)",
		},
		Measured: []string{
			"its processes as the kernel counts them: memory, RSS, threads, CPU time, exits, OOM kills",
			"on ZooKeeper, what the servers saw of it (cons): requests, outstanding requests, connections",
			"on etcd and Consul (local placement), the same through a relay of the lab's on loopback in front of it: its connections, its requests (gRPC streams or HTTP requests) and those not answered yet (open streams, watches included)",
		},
		Examples: []string{"examples/zk-reader-python/reader.py with examples/exec-leader-stall.yaml (held)",
			"examples/kv-reader-python/reader.py with examples/exec-etcd-quorum-loss.yaml (retry-at-once violated, backoff held)"},
	}
}
