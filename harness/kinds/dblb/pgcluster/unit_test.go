package pgcluster

import (
	"strings"
	"testing"

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
