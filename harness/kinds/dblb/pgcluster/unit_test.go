package pgcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

func TestOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		opts []Option
		bad  string
	}{
		{nil, ""},
		{[]Option{WithReplicas(MaxReplicas + 1)}, "replicas"},
		{[]Option{WithSetting("port", "5432")}, "port"},
		{[]Option{WithPrimaryCPU(-1)}, "cpu"},
	} {
		o := defaults()
		for _, f := range c.opts {
			f(&o)
		}
		err := o.check()
		if (err == nil) != (c.bad == "") || (err != nil && !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%s: %v", c.bad, err)
		}
	}
}

func TestConfQuotes(t *testing.T) {
	c := &Cluster{o: defaults()}
	c.o.settings["application_name"] = "it's"
	s := c.conf(lab.ServerLayout{Bind: "127.0.0.1", Ports: map[string]int{"pg": 5433}}, "primary")
	for _, want := range []string{"port = 5433", "listen_addresses = '127.0.0.1'", "wal_level = replica", "application_name = 'it''s'"} {
		if !strings.Contains(s, want) {
			t.Errorf("conf lacks %q:\n%s", want, s)
		}
	}
}

// A statement log gives the statements of the roles asked for, as they
// started, in both protocols, and keeps a line being written for later.
func TestStatementLogReadsWhatTheServerLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "primary.log")
	lines := "2026-12-06 02:41:01.434 UTC [4711] pod1 LOG:  execute stmtcache_1: SELECT count(*) FROM items WHERE id BETWEEN $1 AND $2\n" +
		"2026-12-06 02:41:01.434 UTC [4711] pod1 DETAIL:  parameters: $1 = '1', $2 = '2'\n" +
		"2026-12-06 02:41:01.500 UTC [4712] pod2 LOG:  statement: update items set v = v + 1 where id = 3\n" +
		"2026-12-06 02:41:01.600 UTC [4713] postgres LOG:  statement: SELECT 1\n" +
		"2026-12-06 02:41:01.700 UTC [4712] pod2 LOG:  statement: BEGIN\n" +
		"2026-12-06 02:41:02.100 UTC [4711] pod1 LOG:  statement: SEL"
	require.NoError(t, os.WriteFile(path, []byte(lines), 0o644))
	l := &StatementLog{path: path, prefix: "pod"}
	got, err := l.Read()
	require.NoError(t, err)
	at := func(s string) time.Time { v, err := time.Parse(time.RFC3339Nano, s); require.NoError(t, err); return v }
	require.Equal(t, []Statement{{At: at("2026-12-06T02:41:01.434Z"), Role: "pod1"}, {At: at("2026-12-06T02:41:01.5Z"), Role: "pod2", Write: true}}, got)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("ECT 2\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err = l.Read()
	require.NoError(t, err)
	require.Equal(t, []Statement{{At: at("2026-12-06T02:41:02.1Z"), Role: "pod1"}}, got, "the line finished since")
}
