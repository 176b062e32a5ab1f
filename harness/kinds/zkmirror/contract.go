package zkmirror

import "github.com/chaoslab/chaoslab/harness/lab"

// Contract: a user's mirror client (IL-0587's TreeCache clients).
func (s *Settings) Contract() lab.Contract {
	return lab.Contract{
		Role: "a client that mirrors a ZooKeeper subtree and keeps it fresh, one process (or container) per instance",
		Env: []lab.EnvVar{
			{Name: "CHAOSLAB_ZK_CONNECT", What: "the ensemble, host:port,host:port,..."},
			{Name: "CHAOSLAB_TREE_ROOT", What: "the subtree to mirror"},
			{Name: "CHAOSLAB_TREE_ZNODES", What: "how many znodes it holds"},
			{Name: "CHAOSLAB_SESSION_TIMEOUT_MS", What: "the session timeout the built-in clients ask for"},
			{Name: "CHAOSLAB_REPORT_INTERVAL_MS", What: "how often to print a sample"},
			{Name: "CHAOSLAB_CLIENT_ID", What: "the instance's name (client-03)"},
			{Name: "CHAOSLAB_INCARNATION", What: "0, then 1, 2... each time the instance is restarted"},
			{Name: "CHAOSLAB_SEED", What: "a seed for its random choices, derived from the run's"},
			{Name: "CHAOSLAB_MEMORY_LIMIT_MB", What: "its kernel-enforced memory limit (0: none)"},
		},
		Must: []string{
			"connect to the ensemble and mirror the subtree, keeping it up to date as znodes change",
			"keep running; an instance that exits is restarted after restart_delay, as a supervisor would",
			"optionally print samples, one JSON object a line: nodes (znodes held; the warm-up waits for all), max_seq (the highest seq=N seen: freshness), pending, reconnects",
		},
		Measured: []string{
			"its processes as the kernel counts them: memory charged to its cgroup, RSS, threads, exits, OOM kills",
			"what the servers saw of it (ZooKeeper's cons, mapped to the instance by its sockets): requests, outstanding requests, reconnects",
			"the servers' own backlog (mntr) and the leader's fate",
		},
		// A rolling replacement's quorum and elections are the operator's
		// procedure, the same whatever the clients do (IL-0277).
		NotJudged: []string{"cluster.", "ensemble."},
		Examples:  []string{"examples/zk-treecache-python/treecache.py (violated)", "examples/zk-paced-go (held)"},
	}
}
