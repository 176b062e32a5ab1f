package dblb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// rolePrefix names the PostgreSQL role of a user's app pod (pod1, pod2...):
// the servers count its statements by it.
const rolePrefix = "pod"

// SetClient runs a user's app pod in place of chaoslab's own.
func (s *Settings) SetClient(c *lab.ClientProgram) { s.Program = c }

// Contract: a user's app pod (IL-0206's Rails load balancer), in place of
// chaoslab's own.
func (s *Settings) Contract() lab.Contract {
	return lab.Contract{
		Role: "an app pod: one process per Consul client agent (its own agent, as in a GKE pod), reading from the replicas it finds by DNS and writing to the primary",
		Env: []lab.EnvVar{
			{Name: "CHAOSLAB_DNS_SERVER", What: "host:port of the pod's DNS (TCP and UDP): its own agent, behind a forwarder that answers SERVFAIL when the agent does not (on containers, where the run's network reaches the lab)"},
			{Name: "CHAOSLAB_REPLICA_NAME", What: "the name to look up as SRV records: " + strings.TrimSuffix(replicaName, ".") + " (target host and port of each replica)"},
			{Name: "CHAOSLAB_PG_PRIMARY", What: "host:port of the PostgreSQL primary (a proxy of the lab's, the pod's own, that counts the statements it sends there)"},
			{Name: "CHAOSLAB_PG_USER", What: "the pod's PostgreSQL role (pod1, pod2...; no password); CHAOSLAB_PG_DATABASE the database (postgres)"},
			{Name: "CHAOSLAB_POD_ID", What: "the pod's name (pod-01); CHAOSLAB_POD_INDEX its number (1)"},
			{Name: "CHAOSLAB_READ_RATE", What: "reads a second the pod's users ask for (open loop); CHAOSLAB_WRITE_RATE writes a second"},
			{Name: "CHAOSLAB_ROWS", What: "rows in the table items(id int primary key, v int); CHAOSLAB_READ_ROWS the ids one read aggregates"},
			{Name: "CHAOSLAB_DISCOVERY_INTERVAL_MS", What: "the scenario's period between two lookups (GitLab's 60 s, scaled); the program may keep its own"},
			{Name: "CHAOSLAB_QUERY_TIMEOUT_MS", What: "the scenario's query timeout"},
			{Name: "CHAOSLAB_INCARNATION", What: "0, then 1, 2... each time the pod is restarted after it exited"},
			{Name: "CHAOSLAB_SEED", What: "a seed for its random choices, derived from the run's"},
		},
		Must: []string{
			"connect to PostgreSQL as CHAOSLAB_PG_USER, and keep running until it is sent SIGTERM",
			"find the replicas by looking up CHAOSLAB_REPLICA_NAME (SRV) at CHAOSLAB_DNS_SERVER, and decide itself what to do when a lookup fails or finds none",
			"send about CHAOSLAB_READ_RATE reads a second, each a SELECT on items (e.g. SELECT count(*), sum(v) FROM items WHERE id BETWEEN lo AND lo + READ_ROWS), to a replica it found or, if it chooses, to the primary; and CHAOSLAB_WRITE_RATE writes a second (UPDATE items ...) to the primary",
			"be reading at a replica by the end of the warm-up (the steady-state check)",
		},
		Measured: []string{
			"where its reads (SELECT) and writes (INSERT, UPDATE, DELETE) went, per second: those sent to the primary counted on the wire by the pod's proxy (even when the saturated primary is too slow to start them), those sent to a replica from the replica's own statement log for the pod's role (log_statement = all); judged: the share of the reads it was asked for that no replica got while the fault lasted (sent to the primary, or held back waiting on it: a pool waiting on a saturated primary sends few; app.reads_sent_of_asked.during_faults says how many it sent)",
			"its DNS lookups at its pod's forwarder: answered with replicas, answered with none (empty, NXDOMAIN, the agent's SERVFAIL), not answered by the agent",
			"the primary's connections and CPU, the agents' memory and OOM kills, the pod's exits",
		},
		NotMeasured: []string{MetricReadP99, "app.read_p50_ms.during_faults", "app.read_p99_ms.before_faults", MetricErrorRate, "app.processes_without_replicas.max"},
		Examples:    []string{"examples/dblb-app-go (violated: a lookup that finds no replica empties the list)", "examples/dblb-app-go -keep (held: the list is kept)"},
	}
}

// podRole is pod i's PostgreSQL role (i from 0).
func podRole(i int) string { return rolePrefix + strconv.Itoa(i+1) }

// programEnv is what a user's pod i is told (Contract).
func (w *workload) programEnv(i, inc int, dns, primary string, seed uint64) map[string]string {
	s := w.s
	return map[string]string{
		"CHAOSLAB_DNS_SERVER": dns, "CHAOSLAB_REPLICA_NAME": strings.TrimSuffix(replicaName, "."),
		"CHAOSLAB_PG_PRIMARY": primary, "CHAOSLAB_PG_USER": podRole(i), "CHAOSLAB_PG_DATABASE": "postgres",
		"CHAOSLAB_POD_ID": fmt.Sprintf("pod-%02d", i+1), "CHAOSLAB_POD_INDEX": strconv.Itoa(i + 1),
		"CHAOSLAB_READ_RATE":  strconv.FormatFloat(s.ReadRate*float64(s.Processes), 'g', -1, 64),
		"CHAOSLAB_WRITE_RATE": strconv.FormatFloat(s.WriteRate*float64(s.Processes), 'g', -1, 64),
		"CHAOSLAB_ROWS":       strconv.Itoa(s.Rows), "CHAOSLAB_READ_ROWS": strconv.Itoa(s.ReadRows),
		"CHAOSLAB_DISCOVERY_INTERVAL_MS": strconv.FormatInt(s.Interval.D().Milliseconds(), 10),
		"CHAOSLAB_QUERY_TIMEOUT_MS":      strconv.FormatInt(s.QueryTimeout.D().Milliseconds(), 10),
		"CHAOSLAB_INCARNATION":           strconv.Itoa(inc), "CHAOSLAB_SEED": strconv.FormatUint(seed+uint64(inc), 10),
	}
}

// program describes the app pods' program in a report.
func (s *Settings) program() string {
	if s.Program == nil {
		return fmt.Sprintf("chaoslab's, %d processes each (each its own discovery and pools of %d connections per server)", s.Processes, s.PoolSize)
	}
	return "the user's: " + strings.TrimSpace(strings.Join(s.Program.Command, " ")+" "+s.Program.Image)
}
