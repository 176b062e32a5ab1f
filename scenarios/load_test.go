package scenarios_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	"github.com/chaoslab/chaoslab/harness/lab"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/seeds"
)

const il0587 = "il-0587-zk-treecache-reconnect-storm"

// small is a cut-down copy of the built-in IL-0587 scenario; the broken
// scenarios below are edits of it.
const small = `# IL-0587, small.
id: il-0587-small
title: ZooKeeper leader stall sets off a refresh storm
case: IL-0587
system: zookeeper
description: A small copy of the built-in IL-0587 scenario.
topology:
  zookeeper:
    servers: 3
workload:
  kind: zk-tree-mirror
  clients: 4
  tree:
    path: /chaoslab/deployments
    fanout: [3, 20]
    data_bytes: 1024
  session_timeout: 10s
  memory_limit_mb: 72
  writer:
    rate_per_sec: 50
    share: 0.1
timeline:
  warmup: 30s
  faults:
    - at: 0s
      fault: pause
      target: leader
      duration: 15s
  observe: 30s
variants:
  vulnerable:
    description: A full refresh on every reconnect.
    workload:
      strategy: full-refresh
  mitigated:
    description: A paced walk with 8 requests in flight.
    workload:
      strategy: paced
      window: 8
hypotheses:
  - id: no-client-oom
    description: No client is killed for running out of memory.
    metric: clients.oom_kills
    op: "=="
    threshold: 0
comparisons:
  - id: outstanding-10x
    description: The vulnerable clients drive 10 times the outstanding requests.
    metric: servers.outstanding_requests.max
    numerator: vulnerable
    denominator: mitigated
    op: ">="
    threshold: 10
expect:
  vulnerable: violated
  mitigated: held
evidence:
  - incident: Reconnecting proxies flooded the servers with refresh batches.
    metric: servers.outstanding_requests.max
`

// edit replaces the one occurrence of old in text.
func edit(t *testing.T, text, old, new string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(text, old), "edit: %q must occur once", old)
	return strings.Replace(text, old, new, 1)
}

// lineOf is the 1-based line of the one occurrence of marker in text.
func lineOf(t *testing.T, text, marker string) int {
	t.Helper()
	require.Equal(t, 1, strings.Count(text, marker), "lineOf: %q must occur once", marker)
	return strings.Count(text[:strings.Index(text, marker)], "\n") + 1
}

// fieldErrors returns the loader's errors, which must be scenarios.Errors.
func fieldErrors(t *testing.T, err error) scenarios.Errors {
	t.Helper()
	require.Error(t, err)
	var es scenarios.Errors
	require.True(t, errors.As(err, &es), "want scenarios.Errors, got %T: %v", err, err)
	require.NotEmpty(t, es)
	return es
}

// acceptOnlyIL0587 stands in for the seeds package during a test.
func acceptOnlyIL0587(t *testing.T) {
	old := scenarios.CaseChecker
	scenarios.CaseChecker = func(id string) error {
		if strings.EqualFold(id, "IL-0587") {
			return nil
		}
		return fmt.Errorf("no case record %q", id)
	}
	t.Cleanup(func() { scenarios.CaseChecker = old })
}

func TestBuiltinScenariosLoad(t *testing.T) {
	old := scenarios.CaseChecker
	scenarios.CaseChecker = func(id string) error { _, err := seeds.Get(id); return err }
	t.Cleanup(func() { scenarios.CaseChecker = old })

	all, err := scenarios.Builtin()
	require.NoError(t, err)
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.Len(t, all, len(files), "every YAML file here is a built-in scenario")

	ids := map[string]bool{}
	for _, s := range all {
		require.False(t, ids[s.ID], "repeated id %s", s.ID)
		ids[s.ID] = true
		require.Equal(t, "scenarios/"+s.ID+".yaml", s.Source, "a built-in file is named after its id")
		_, err := seeds.Get(s.Case)
		require.NoError(t, err, "%s: case %s", s.ID, s.Case)
		require.NotEmpty(t, s.Hypotheses)
		for name := range s.Expect {
			require.Contains(t, s.Variants, name)
		}
		for _, name := range s.VariantNames() {
			_, err := s.WorkloadFor(name)
			require.NoError(t, err, "%s: variant %s", s.ID, name)
			_, err = s.TopologyFor(name)
			require.NoError(t, err, "%s: variant %s", s.ID, name)
		}
	}
	require.True(t, ids[il0587])

	// Loading the file from disk gives the same scenario.
	s, err := scenarios.Load(il0587 + ".yaml")
	require.NoError(t, err)
	require.Equal(t, il0587+".yaml", s.Source)
	b, err := scenarios.Find(il0587)
	require.NoError(t, err)
	s.Source = b.Source
	require.Equal(t, b, s)
}

func TestFind(t *testing.T) {
	for _, ref := range []string{
		il0587,
		strings.ToUpper(il0587),
		"IL-0587",
		"il-0587",
		"Il-0587",
	} {
		s, err := scenarios.Find(ref)
		require.NoError(t, err, ref)
		require.Equal(t, il0587, s.ID, ref)
		require.Equal(t, "IL-0587", s.Case)
	}

	_, err := scenarios.Find("il-9999")
	require.ErrorContains(t, err, `no scenario "il-9999" (known: `)
	require.ErrorContains(t, err, il0587)

	// A path loads the file.
	s, err := scenarios.Find("./" + il0587 + ".yaml")
	require.NoError(t, err)
	require.Equal(t, "./"+il0587+".yaml", s.Source)
	_, err = scenarios.Find(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestWorkloadFor(t *testing.T) {
	s, err := scenarios.Find(il0587)
	require.NoError(t, err)
	require.Equal(t, []string{"vulnerable", "mitigated"}, s.VariantNames())
	require.Equal(t, "zk-tree-mirror", s.Kind())

	vs, err := s.WorkloadFor("vulnerable")
	require.NoError(t, err)
	vul := vs.(*zkmirror.Settings)
	require.Equal(t, "full-refresh", vul.Strategy)
	require.Equal(t, 8, vul.Window, "the kind's default: full-refresh ignores it")

	ms, err := s.WorkloadFor("mitigated")
	require.NoError(t, err)
	mit := ms.(*zkmirror.Settings)
	require.Equal(t, "paced", mit.Strategy)
	require.Equal(t, 8, mit.Window)

	// Every other field comes from the scenario's workload, or the default.
	for _, w := range []*zkmirror.Settings{vul, mit} {
		require.Equal(t, 12, w.Clients)
		require.Equal(t, zkmirror.Tree{Root: "/chaoslab/deployments", Fanout: []int{30, 200}, DataBytes: 1024}, w.Tree)
		require.Equal(t, 30*time.Second, w.SessionTimeout.D())
		require.Equal(t, time.Second, w.RetryBase.D(), "not in the scenario: the default")
	}
	// Each call decodes afresh: changing one leaves the next as it was.
	mit.Tree.Fanout[0] = 999
	again, err := s.WorkloadFor("mitigated")
	require.NoError(t, err)
	require.Equal(t, 30, again.(*zkmirror.Settings).Tree.Fanout[0])

	_, err = s.WorkloadFor("canary")
	require.EqualError(t, err, `scenario il-0587-zk-treecache-reconnect-storm: no variant "canary"`)
}

func TestWorkloadForNested(t *testing.T) {
	// A nested mapping overrides only the fields it names; a list is replaced.
	text := edit(t, small, "      strategy: paced\n      window: 8\n",
		"      strategy: paced\n      window: 8\n      tree:\n        fanout: [2, 5]\n      writer:\n        share: 0.5\n")
	s, err := scenarios.Parse("nested.yaml", []byte(text))
	require.NoError(t, err)
	st, err := s.WorkloadFor("mitigated")
	require.NoError(t, err)
	w := st.(*zkmirror.Settings)
	require.Equal(t, zkmirror.Tree{Root: "/chaoslab/deployments", Fanout: []int{2, 5}, DataBytes: 1024}, w.Tree)
	require.Equal(t, zkmirror.WriterSettings{RatePerSec: 50, Share: 0.5}, w.Writer)
	require.Equal(t, 4, w.Clients)
	require.Equal(t, 72, w.MemoryLimitMB)
	vul, err := s.WorkloadFor("vulnerable")
	require.NoError(t, err)
	require.Equal(t, []int{3, 20}, vul.(*zkmirror.Settings).Tree.Fanout)
}

func TestTopologyForVariant(t *testing.T) {
	// A variant may change the topology too (IL-0277 raises initLimit).
	text := edit(t, small, "      strategy: paced\n      window: 8\n",
		"      strategy: paced\n      window: 8\n    topology:\n      zookeeper:\n        init_limit: 30\n")
	s, err := scenarios.Parse("topo.yaml", []byte(text))
	require.NoError(t, err)
	mit, err := s.TopologyFor("mitigated")
	require.NoError(t, err)
	vul, err := s.TopologyFor("vulnerable")
	require.NoError(t, err)
	require.Equal(t, 30, mit.(*zookeeper.Topology).InitLimit)
	require.Equal(t, 10, vul.(*zookeeper.Topology).InitLimit, "the default")
	require.Equal(t, 3, mit.(*zookeeper.Topology).Servers)
}

// replaceSteps is small with a rolling replacement for its timeline.
func replaceSteps(t *testing.T, variant string) string {
	t.Helper()
	text := edit(t, small, "      fault: pause\n      target: leader\n      duration: 15s\n", `      fault: replace
      target: member:zk1
      duration: 5s
      params:
        gate: shallow
        on_timeout: proceed
    - at: 5s
      fault: replace
      target: member:zk2
      duration: 5s
`)
	return edit(t, text, "      strategy: paced\n      window: 8\n", "      strategy: paced\n      window: 8\n"+variant)
}

func TestFaultsForVariant(t *testing.T) {
	// A variant may change its fault steps' parameters (IL-0277: the
	// mitigated procedure waits for a deep gate and stops on a timeout).
	text := replaceSteps(t, `    timeline:
      faults:
        - step: 1
          params:
            gate: deep
            gate_timeout: 90s
            on_timeout: stop
`)
	s, err := scenarios.Parse("steps.yaml", []byte(text))
	require.NoError(t, err)
	mit, err := s.FaultsFor("mitigated")
	require.NoError(t, err)
	vul, err := s.FaultsFor("vulnerable")
	require.NoError(t, err)
	require.Len(t, mit, 2)
	require.Equal(t, map[string]any{"gate": "deep", "gate_timeout": "90s", "on_timeout": "stop"}, mit[0].ParamsMap())
	require.Equal(t, map[string]any{"gate": "shallow", "on_timeout": "proceed"}, vul[0].ParamsMap(), "the scenario's")
	require.Equal(t, "member:zk1", mit[0].Target, "when and whom stay the scenario's")
	require.Nil(t, mit[1].ParamsMap(), "a step no variant changes")
	f, err := mit[0].NewFault()
	require.NoError(t, err)
	require.Equal(t, faults.GateDeep, f.(*faults.Replace).Gate)
	require.Equal(t, map[string]any{"gate": "shallow", "on_timeout": "proceed"}, s.Timeline.Faults[0].ParamsMap(), "the scenario's own steps are not changed")
	_, err = s.FaultsFor("nope")
	require.Error(t, err)

	// Every problem of an override names its line and field.
	for _, tc := range []struct{ over, want string }{
		{"    timeline:\n      faults:\n        - step: 3\n          params: {gate: deep}\n",
			"variants.mitigated.timeline.faults[0].step: no fault step 3: timeline.faults has 2"},
		{"    timeline:\n      faults:\n        - step: 1\n          params: {gate: thorough}\n",
			`variants.mitigated.timeline.faults[0].params.gate: want none, shallow or deep, got "thorough"`},
		{"    timeline:\n      faults:\n        - step: 1\n          params: {gait: deep}\n",
			"variants.mitigated.timeline.faults[0].params.gait: unknown field"},
		{"    timeline:\n      faults:\n        - step: 1\n          params: {gate: deep}\n        - step: 1\n          params: {on_timeout: stop}\n",
			"variants.mitigated.timeline.faults[1].step: step 1 is changed twice"},
		{"    timeline:\n      faults: []\n", "variants.mitigated.timeline.faults: want at least one step"},
		{"    timeline:\n      faults:\n        - params: {gate: deep}\n", "variants.mitigated.timeline.faults[0].step: required"},
		{"    timeline:\n      warmup: 10s\n      faults:\n        - step: 1\n          params: {gate: deep}\n", "variants.mitigated.timeline.warmup: unknown field"},
		{"    timeline:\n      faults:\n        - step: 1\n", "variants.mitigated.timeline.faults[0]: changes nothing"},
		{"    timeline:\n      faults:\n        - step: 1\n          duration: 0s\n", "variants.mitigated.timeline.faults[0].duration: want more than 0s"},
	} {
		_, err := scenarios.Parse("steps.yaml", []byte(replaceSteps(t, tc.over)))
		require.Error(t, err, tc.over)
		require.Contains(t, err.Error(), tc.want)
		var es scenarios.Errors
		require.ErrorAs(t, err, &es)
		for _, e := range es {
			require.Positive(t, e.Line, "%v", e)
		}
	}
}

func TestRunLength(t *testing.T) {
	s, err := scenarios.Parse("small.yaml", []byte(small))
	require.NoError(t, err)
	require.Equal(t, 75*time.Second, s.RunLength(), "30s warm-up + 15s pause + 30s observe")

	// The run lasts until the fault that ends last has ended.
	text := edit(t, small, "      duration: 15s\n", `      duration: 15s
    - at: 20s
      fault: pause
      target: any
      duration: 10s
    - at: 40s
      fault: kill-restart
      target: follower
      duration: 5s
`)
	s, err = scenarios.Parse("small.yaml", []byte(text))
	require.NoError(t, err)
	require.Equal(t, 105*time.Second, s.RunLength(), "30s warm-up + 45s of faults + 30s observe")

	b, err := scenarios.Find(il0587)
	require.NoError(t, err)
	last := time.Duration(0)
	for _, f := range b.Timeline.Faults {
		last = max(last, f.At.D()+f.Duration.D())
	}
	require.Equal(t, b.Timeline.Warmup.D()+last+b.Timeline.Observe.D(), b.RunLength())

	// A variant whose steps wait for a deep gate plans them longer; a step
	// starts when the one before it has ended (IL-0277).
	text = replaceSteps(t, "    timeline:\n      faults:\n        - step: 1\n          duration: 50s\n")
	s, err = scenarios.Parse("steps.yaml", []byte(text))
	require.NoError(t, err)
	require.Equal(t, 70*time.Second, s.RunLengthFor("vulnerable"), "30s warm-up + 5s + 5s + 30s observe")
	require.Equal(t, 115*time.Second, s.RunLengthFor("mitigated"), "30s warm-up + 50s, then 5s + 30s observe")
	require.Equal(t, 115*time.Second, s.RunLength(), "the longest variant")
	require.Equal(t, "1m10s to 1m55s", s.LengthText())
}

func TestParseSmall(t *testing.T) {
	acceptOnlyIL0587(t)
	s, err := scenarios.Parse("small.yaml", []byte(small))
	require.NoError(t, err)
	require.Equal(t, "small.yaml", s.Source)
	topo, err := s.TopologyFor("mitigated")
	require.NoError(t, err)
	require.Equal(t, 3, topo.(*zookeeper.Topology).Servers)
	w, err := s.WorkloadFor("mitigated")
	require.NoError(t, err)
	require.Equal(t, 3+3*20, w.(*zkmirror.Settings).Tree.Nodes())
}

func TestParseErrors(t *testing.T) {
	acceptOnlyIL0587(t)
	metrics := knownMetrics(t)
	cases := []struct {
		name  string
		text  string
		at    string // the text on the line the error must name
		field string
		msg   string
	}{{
		name:  "unknown top-level field",
		text:  edit(t, small, "system: zookeeper\n", "system: zookeeper\nowner: sre-team\n"),
		at:    "owner:",
		field: "owner",
		msg:   "unknown field (known: id, title, case, system, description, topology, workload, timeline, variants, hypotheses, comparisons, expect, evidence, sizes)",
	}, {
		name:  "unknown nested field",
		text:  edit(t, small, "fanout: [3, 20]", "fanoutt: [3, 20]"),
		at:    "fanoutt:",
		field: "workload.tree.fanoutt",
		msg:   "unknown field (known: path, fanout, data_bytes)",
	}, {
		name:  "wrong kind",
		text:  edit(t, small, "clients: 4", `clients: "many"`),
		at:    "clients:",
		field: "workload.clients",
		msg:   `want a whole number, got "many"`,
	}, {
		name:  "a number in quotes is a string",
		text:  edit(t, small, "clients: 4", `clients: "12"`),
		at:    "clients:",
		field: "workload.clients",
		msg:   `want a whole number, got the string "12"`,
	}, {
		name:  "a list for a number",
		text:  edit(t, small, "servers: 3", "servers: [1, 2, 3]"),
		at:    "servers:",
		field: "topology.zookeeper.servers",
		msg:   "want a whole number, got a list",
	}, {
		name:  "a mapping for a string",
		text:  edit(t, small, "title: ZooKeeper leader stall sets off a refresh storm", "title:\n  text: stall"),
		at:    "text: stall",
		field: "title",
		msg:   "want a string",
	}, {
		name:  "bad duration",
		text:  edit(t, small, "session_timeout: 10s", "session_timeout: 10 parsecs"),
		at:    "session_timeout:",
		field: "workload.session_timeout",
		msg:   `not a duration (like 10s or 1m30s): "10 parsecs"`,
	}, {
		name:  "bad enum",
		text:  edit(t, small, "target: leader", "target: president"),
		at:    "target:",
		field: "timeline.faults[0].target",
		msg:   targets,
	}, {
		name:  "unknown fault",
		text:  edit(t, small, "fault: pause", "fault: meteor"),
		at:    "fault: meteor",
		field: "timeline.faults[0].fault",
		msg:   `unknown fault "meteor" (known: add-capacity, consul-dns-load, cpu-throttle, degrade-links, disconnect, kill-restart, pause, raise-init-limit, remove-capacity, replace, restart-fleet, set-memory-limit, stop, switch-strategy)`,
	}, {
		name:  "unknown metric in a hypothesis",
		text:  edit(t, small, "metric: clients.oom_kills", "metric: clients.happiness"),
		at:    "clients.happiness",
		field: "hypotheses[0].metric",
		msg:   `unknown metric "clients.happiness" (known: ` + metrics + "; or a reducer such as max(SERIES)@from-fault)",
	}, {
		name:  "a reducer over an unknown series",
		text:  edit(t, small, "metric: clients.oom_kills", "metric: max(clients.joy)@from-fault"),
		at:    "clients.joy",
		field: "hypotheses[0].metric",
		msg:   `max(clients.joy)@from-fault: unknown series "clients.joy" (known: ` + knownSeries(t) + ")",
	}, {
		name:  "a reducer with a bad window",
		text:  edit(t, small, "metric: clients.oom_kills", "metric: max(client.pending)@tomorrow"),
		at:    "client.pending",
		field: "hypotheses[0].metric",
		msg:   `max(client.pending)@tomorrow: window want one of all, after-warmup, before-fault, from-fault, during-faults, after-faults, got "tomorrow"`,
	}, {
		name:  "a fault's unknown parameter",
		text:  edit(t, small, "      duration: 15s\n", "      duration: 15s\n      params:\n        speed: 2\n"),
		at:    "speed: 2",
		field: "timeline.faults[0].params.speed",
		msg:   "unknown field (known: )",
	}, {
		name:  "a fault's bad parameter",
		text:  edit(t, small, "      fault: pause\n      target: leader\n      duration: 15s\n", "      fault: cpu-throttle\n      target: leader\n      duration: 15s\n      params:\n        cores: 0\n"),
		at:    "cores: 0",
		field: "timeline.faults[0].params.cores",
		msg:   "0 is below 0.01 CPUs, the least the kernel's CPU quota and the container engine give",
	}, {
		name:  "a kind that does not run on the system",
		text:  edit(t, small, "kind: zk-tree-mirror", "kind: kinesis-frontend"),
		at:    "kind: kinesis-frontend",
		field: "workload.kind",
		msg:   "kinesis-frontend runs against etcd, not zookeeper",
	}, {
		name:  "an unknown kind",
		text:  edit(t, small, "kind: zk-tree-mirror", "kind: zk-tree-hugger"),
		at:    "kind: zk-tree-hugger",
		field: "workload.kind",
		msg:   `unknown workload kind "zk-tree-hugger" (known: aws-ebs-cluster, exec, kinesis-frontend, rails-db-lb, zk-tree-mirror)`,
	}, {
		name:  "an unknown system",
		text:  edit(t, small, "system: zookeeper", "system: chubby"),
		at:    "system: chubby",
		field: "system",
		msg:   `unknown system "chubby" (known: consul, etcd, zookeeper)`,
	}, {
		name:  "expect names a missing variant",
		text:  edit(t, small, "  mitigated: held\n", "  mitigated: held\n  canary: held\n"),
		at:    "canary: held",
		field: "expect.canary",
		msg:   `no variant "canary"`,
	}, {
		name:  "a jump with no time before the first fault",
		text:  edit(t, small, "    metric: clients.oom_kills\n", "    metric: jump(server.requests)@from-fault\n"),
		at:    "metric: jump(server.requests)@from-fault",
		field: "hypotheses[0].metric",
		msg:   "jump(server.requests)@from-fault: measured against the before-fault window, from the warm-up's end to the first fault, which comes at 0s here; a rate there needs 10s or more of samples: give the first fault at: 10s or later",
	}, {
		name:  "bad expected verdict",
		text:  edit(t, small, "  mitigated: held\n", "  mitigated: fine\n"),
		at:    "mitigated: fine",
		field: "expect.mitigated",
		msg:   `want held or violated, got "fine"`,
	}, {
		name:  "expect repeats a variant",
		text:  edit(t, small, "  mitigated: held\n", "  mitigated: held\n  vulnerable: held\n"),
		at:    "vulnerable: held",
		field: "expect.vulnerable",
		msg:   "repeated key",
	}, {
		name:  "comparison names a missing variant",
		text:  edit(t, small, "denominator: mitigated", "denominator: canary"),
		at:    "denominator: canary",
		field: "comparisons[0].denominator",
		msg:   `no variant "canary"`,
	}, {
		name:  "variant workload with an unknown field",
		text:  edit(t, small, "window: 8", "windw: 8"),
		at:    "windw:",
		field: "variants.mitigated.workload.windw",
		msg:   "unknown field (known: clients, start_spread, strategy, window, retries, retry_base, session_timeout, report_interval, paced_start, reconnect_jitter, tree, ballast, memory_limit_mb, restart, restart_delay, writer, fresh_within, program)",
	}, {
		name:  "variant workload with a wrong kind",
		text:  edit(t, small, "window: 8", "window: eight"),
		at:    "window: eight",
		field: "variants.mitigated.workload.window",
		msg:   `want a whole number, got "eight"`,
	}, {
		name:  "a window of nothing",
		text:  edit(t, small, "window: 8", "window: 0"),
		at:    "window: 0",
		field: "variants.mitigated.workload.window",
		msg:   "want at least 1, got 0",
	}, {
		name:  "unknown case",
		text:  edit(t, small, "case: IL-0587", "case: IL-9999"),
		at:    "case: IL-9999",
		field: "case",
		msg:   `no case record "IL-9999"`,
	}, {
		name:  "missing required field",
		text:  edit(t, small, "    description: No client is killed for running out of memory.\n", ""),
		at:    "- id: no-client-oom",
		field: "hypotheses[0].description",
		msg:   "required",
	}, {
		name: "a second document",
		text: edit(t, small, "evidence:\n", "---\nevidence:\n"),
		at:   "---",
		msg:  "a second YAML document starts here; a scenario file holds one",
	}, {
		name: "invalid YAML",
		text: edit(t, small, "title: ZooKeeper leader stall sets off a refresh storm",
			"title: ZooKeeper leader stall: a refresh storm"),
		at:  "title:",
		msg: "parse YAML: mapping values are not allowed in this context (" + colonHint + ")",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.Parse("broken.yaml", []byte(tc.text))
			es := fieldErrors(t, err)
			line := lineOf(t, tc.text, tc.at)
			var got *scenarios.FieldError
			for _, e := range es {
				if e.Field == tc.field && e.Msg == tc.msg {
					got = e
				}
			}
			require.NotNil(t, got, "no error %q at %s in:\n%v", tc.msg, tc.field, err)
			require.Equal(t, "broken.yaml", got.File)
			require.Equal(t, line, got.Line, "line of %s", tc.field)
			want := fmt.Sprintf("broken.yaml:%d: %s: %s", line, tc.field, tc.msg)
			if tc.field == "" {
				want = fmt.Sprintf("broken.yaml:%d: %s", line, tc.msg)
			}
			require.Equal(t, want, got.Error())
			require.Contains(t, err.Error(), want)
		})
	}
}

// A few whole messages as `chaoslab validate` prints them.
func TestParseErrorText(t *testing.T) {
	acceptOnlyIL0587(t)
	_, err := scenarios.Parse("scenarios/broken.yaml", []byte(edit(t, small, "session_timeout: 10s", "session_timeout: 10 parsecs")))
	require.EqualError(t, err, `scenarios/broken.yaml:17: workload.session_timeout: not a duration (like 10s or 1m30s): "10 parsecs"`)

	_, err = scenarios.Parse("scenarios/broken.yaml", []byte(edit(t, small, "target: leader", "target: president")))
	require.EqualError(t, err, `scenarios/broken.yaml:27: timeline.faults[0].target: `+targets)

	_, err = scenarios.Parse("scenarios/broken.yaml", []byte(edit(t, small, "window: 8", "windw: 8")))
	require.EqualError(t, err, "scenarios/broken.yaml:39: variants.mitigated.workload.windw: unknown field (known: clients, start_spread, strategy, window, retries, retry_base, session_timeout, report_interval, paced_start, reconnect_jitter, tree, ballast, memory_limit_mb, restart, restart_delay, writer, fresh_within, program)")

	// Reported once, by the walk, not again when the override is applied.
	_, err = scenarios.Parse("scenarios/broken.yaml", []byte(edit(t, small, "window: 8", "window: eight")))
	require.EqualError(t, err, `scenarios/broken.yaml:39: variants.mitigated.workload.window: want a whole number, got "eight"`)

	_, err = scenarios.Parse("scenarios/broken.yaml", []byte(edit(t, small, "  mitigated: held\n", "  mitigated: held\n  vulnerable: held\n")))
	require.EqualError(t, err, "scenarios/broken.yaml:57: expect.vulnerable: repeated key")

	_, err = scenarios.Parse("scenarios/broken.yaml", []byte(edit(t, small, "title: ZooKeeper leader stall sets off a refresh storm",
		"title: ZooKeeper leader stall: a refresh storm")))
	require.EqualError(t, err, "scenarios/broken.yaml:3: parse YAML: mapping values are not allowed in this context ("+colonHint+")")

	_, err = scenarios.Parse("scenarios/broken.yaml", nil)
	require.EqualError(t, err, "scenarios/broken.yaml: empty document")

	_, err = scenarios.Parse("scenarios/broken.yaml", []byte("- just\n- a list\n"))
	require.EqualError(t, err, "scenarios/broken.yaml:1: want a mapping")
}

func TestParseReportsEveryError(t *testing.T) {
	acceptOnlyIL0587(t)

	// Structural problems: found by the walk over the YAML, all at once.
	text := edit(t, small, "fanout: [3, 20]", "fanoutt: [3, 20]")
	text = edit(t, text, "clients: 4", "clients: many")
	text = edit(t, text, "warmup: 30s", "warmup: soon")
	text = edit(t, text, "    servers: 3\n", "    servers: 3\n    racks: 2\n")
	_, err := scenarios.Parse("broken.yaml", []byte(text))
	es := fieldErrors(t, err)
	require.Equal(t, []string{"topology.zookeeper.racks", "workload.clients", "workload.tree.fanoutt", "timeline.warmup"}, fields(es), "in file order:\n%v", err)
	require.Equal(t, []int{lineOf(t, text, "racks:"), lineOf(t, text, "clients:"), lineOf(t, text, "fanoutt:"), lineOf(t, text, "warmup:")}, lines(es))

	// Problems of meaning: found by validate, all at once.
	text = edit(t, small, "fault: pause", "fault: meteor")
	text = edit(t, text, "target: leader", "target: president")
	text = edit(t, text, "metric: clients.oom_kills", "metric: clients.happiness")
	text = edit(t, text, "  mitigated: held\n", "  mitigated: held\n  canary: held\n")
	text = edit(t, text, "numerator: vulnerable", "numerator: canary")
	text = edit(t, text, "case: IL-0587", "case: IL-9999")
	text = edit(t, text, "strategy: full-refresh", "strategy: turbo")
	text = edit(t, text, "strategy: paced", "strategy: warp")
	text = edit(t, text, "  vulnerable: violated\n", "  vulnerable: broken\n")
	for range 10 { // variants and expect are maps: the order must not depend on them
		_, err = scenarios.Parse("broken.yaml", []byte(text))
		es = fieldErrors(t, err)
		require.Equal(t, []string{
			"case",
			"timeline.faults[0].fault",
			"timeline.faults[0].target",
			"variants.vulnerable.workload.strategy",
			"variants.mitigated.workload.strategy",
			"hypotheses[0].metric",
			"comparisons[0].numerator",
			"expect.vulnerable",
			"expect.canary",
		}, fields(es), "in file order:\n%v", err)
	}
	require.Len(t, strings.Split(err.Error(), "\n"), len(es), "one line per problem")
}

func fields(es scenarios.Errors) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Field)
	}
	return out
}

func lines(es scenarios.Errors) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.Line)
	}
	return out
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.yaml")
	require.NoError(t, os.WriteFile(path, []byte(edit(t, small, "target: leader", "target: president")), 0o644))
	_, err := scenarios.Load(path)
	es := fieldErrors(t, err)
	require.Len(t, es, 1)
	require.Equal(t, path, es[0].File)
	require.Equal(t, lineOf(t, small, "target: leader"), es[0].Line)

	_, err = scenarios.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// The IL-0384 fleet's fields are checked with file, line and field path.
func TestFleetErrors(t *testing.T) {
	src, err := scenarios.ReadBuiltin("il-0384-kinesis-thread-per-peer.yaml")
	require.NoError(t, err)
	for _, tc := range []struct{ from, to, want string }{
		{"  peer_threads: per-peer\n  bootstrap: peers\n  bootstrap_timeout", "  peer_threads: shared\n  bootstrap: peers\n  bootstrap_timeout", "workload.peer_threads: want per-peer or pool"},
		{"thread_limit: 40", "thread_limit: 4", "workload.thread_limit"},
		{"      pool_threads: 4\n", "      pool_threads: 0\n", "variants.mitigated.workload.pool_threads: want at least 1"},
		{"  etcd:\n    members: 3", "  etcd:\n    members: 9", "topology.etcd.members: want 1 to 7"},
		{"target: fleet\n      duration: 30s", "target: leader\n      duration: 30s", ""},
		{"  max_in_flight: 64\n", "  clients: 64\n", "workload.clients: unknown field"},
	} {
		bad := strings.Replace(string(src), tc.from, tc.to, 1)
		require.NotEqual(t, string(src), bad, tc.from)
		_, err := scenarios.Parse("fleet.yaml", []byte(bad))
		if tc.want == "" {
			require.NoError(t, err, "a selector the loader accepts; the fault's own check refuses it before the run")
			continue
		}
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, "fleet.yaml:")
	}
}

// targets is the error of an unknown target in a zookeeper scenario.
const targets = `unknown target "president" (known: leader, follower, observer, member, any, server, leaders, followers, observers, members, servers, clients, member:NAME, each with :N, :N% or :all)`

// colonHint explains the parser's "mapping values are not allowed".
const colonHint = `a ": " inside a value that is not quoted: put the value in quotes, or indent the key under its parent`

// knownSeries lists the series a zookeeper tree-mirror scenario names.
func knownSeries(t *testing.T) string {
	sys, err := lab.GetSystem("zookeeper")
	require.NoError(t, err)
	k, err := lab.GetKind("zk-tree-mirror")
	require.NoError(t, err)
	var names []string
	for _, s := range scenarios.Series(sys, k) {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// knownMetrics lists the metrics a zookeeper tree-mirror scenario names.
func knownMetrics(t *testing.T) string {
	sys, err := lab.GetSystem("zookeeper")
	require.NoError(t, err)
	k, err := lab.GetKind("zk-tree-mirror")
	require.NoError(t, err)
	var names []string
	for n := range scenarios.Metrics(sys, k) {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
