package fleet

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/kinds/fleet/frontend"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// The load generator judges an answer by the shard it names, against the
// table in the store: a server of the user's that answers 200 with the
// wrong shard (or none) has not routed the request.
func TestWrongShard(t *testing.T) {
	table := frontend.NewTable(100, 4)
	l := &Load{Table: table}
	for _, key := range []string{"stream-1/partition-7", "stream-999/partition-1048575", ""} {
		want, ok := table.Route(key)
		require.True(t, ok)
		require.Empty(t, l.wrongShard(key, []byte(`{"shard":`+strconv.Itoa(want.ID)+`,"cell":"be-1"}`)))
		require.Equal(t, "wrong shard", l.wrongShard(key, []byte(`{"shard":`+strconv.Itoa((want.ID+1)%100)+`}`)))
		require.Equal(t, "answer without a shard", l.wrongShard(key, []byte(`{"cell":"be-1"}`)))
		require.Equal(t, "answer without a shard", l.wrongShard(key, []byte(`not json`)))
	}
	require.Empty(t, (&Load{}).wrongShard("k", nil), "no table, nothing to check")
}

// A user's server is told where etcd and the table are, its name and its
// limit, and runs under the same limits as chaoslab's own; on docker its
// peers reach it by its alias.
func TestUserProgram(t *testing.T) {
	s := NewSettings()
	s.SetClient(&lab.ClientProgram{Command: []string{"/usr/bin/python3", "server.py"}, Env: map[string]string{"MINE": "1"}})
	require.Empty(t, s.Check())
	f := &Fleet{cfg: Config{Settings: s, Env: &lab.Env{Seed: 7}, Etcd: []string{"http://127.0.0.1:2379", "http://127.0.0.1:2381"}, Prefix: "/chaoslab/run"}}
	srv := &Server{ID: "fe-03", Index: 3}
	env := envOf(f.userProgram(srv, 2, "0.0.0.0", "auto"))
	require.Equal(t, "http://127.0.0.1:2379,http://127.0.0.1:2381", env["CHAOSLAB_ETCD_ENDPOINTS"])
	require.Equal(t, "/chaoslab/run", env["CHAOSLAB_FLEET_PREFIX"])
	require.Equal(t, "fe-03", env["CHAOSLAB_SERVER_ID"])
	require.Equal(t, "fe-03", env["CHAOSLAB_ADVERTISE_HOST"], "on docker, the alias")
	require.Equal(t, "40", env["CHAOSLAB_THREAD_LIMIT"])
	require.Equal(t, "2", env["CHAOSLAB_INCARNATION"])
	require.Equal(t, "1", env["MINE"])
	for _, e := range s.Contract().Env {
		require.Contains(t, env, e.Name, "the contract names what the program is told")
	}
	require.Equal(t, "127.0.0.1", envOf(f.userProgram(srv, 0, "127.0.0.1", ""))["CHAOSLAB_ADVERTISE_HOST"])
}

func envOf(p lab.Program) map[string]string {
	m := map[string]string{}
	for _, kv := range p.Env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
