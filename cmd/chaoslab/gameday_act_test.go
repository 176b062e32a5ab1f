package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/kinds/fleet"
	"github.com/chaoslab/chaoslab/harness/kinds/zkmirror"
	"github.com/chaoslab/chaoslab/harness/systems/zookeeper"
)

// The operators' actions' parameters from the command line are read as a
// scenario's are: numbers, fractions and words; a wrong one is refused
// before anything is sent.
func TestActRequestParams(t *testing.T) {
	for _, c := range []struct {
		args   []string
		params map[string]string
		check  func(t *testing.T, f faults.Fault)
	}{
		{[]string{"set-memory-limit", "agents", "30m"}, map[string]string{"mb": "2048"}, func(t *testing.T, f faults.Fault) {
			require.Equal(t, 2048, f.(*faults.SetMemoryLimit).MB)
		}},
		{[]string{"remove-capacity", "fleet", "10s"}, map[string]string{"fraction": "0.1"}, func(t *testing.T, f faults.Fault) {
			require.Equal(t, 0.1, f.(*fleet.RemoveCapacity).Fraction)
		}},
		{[]string{"switch-strategy", "clients", "5s"}, map[string]string{"strategy": "paced", "window": "8"}, func(t *testing.T, f faults.Fault) {
			require.Equal(t, zkmirror.SwitchStrategy{Strategy: "paced", Window: 8}, *f.(*zkmirror.SwitchStrategy))
		}},
		{[]string{"raise-init-limit", "observers", "60s"}, map[string]string{"ticks": "30", "start_timeout": "90s"}, func(t *testing.T, f faults.Fault) {
			require.Equal(t, 30, f.(*zookeeper.RaiseInitLimit).Ticks)
			require.Equal(t, "1m30s", f.(*zookeeper.RaiseInitLimit).StartTimeout.D().String())
		}},
	} {
		a, err := actRequest(c.args, "bob", c.params).Action()
		require.NoError(t, err, c.args)
		require.Equal(t, "bob", a.Author)
		f, err := a.Step.NewFault()
		require.NoError(t, err)
		c.check(t, f)
	}
	for _, bad := range []map[string]string{{"ticks": "0"}, {"ticks": "many"}, {"tick": "30"}} {
		_, err := actRequest([]string{"raise-init-limit", "observers", "60s"}, "bob", bad).Action()
		require.Error(t, err, bad)
	}
	_, err := actRequest([]string{"remove-capacity", "fleet", "10s"}, "bob", map[string]string{"servers": "2", "fraction": "0.5"}).Action()
	require.ErrorContains(t, err, "not both")
}

// gameday act reaches a dashboard by its URL, as the run printed it: an
// operator's URL acts (recorded with its role), a viewer's is refused.
func TestActByURL(t *testing.T) {
	h := gameday.NewHub()
	c := gameday.NewControls(nil)
	s, err := gameday.Listen("127.0.0.1", 0, h, c)
	require.NoError(t, err)
	defer s.Close(context.Background())
	_, errOut, code := chaoslab(t, "gameday", "act", "pause", "leader", "3s", "--url", s.URLFor(gameday.Viewer), "--author", "vic")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "a viewer's token may only watch")
	_, errOut, code = chaoslab(t, "gameday", "act", "pause", "leader", "3s", "--url", s.URLFor(gameday.Operator), "--author", "olga")
	require.Equal(t, 0, code, errOut)
	a := <-c.Actions()
	require.Equal(t, "olga (operator)", a.Author)
	_, errOut, code = chaoslab(t, "gameday", "note", "paged the database team", "--url", s.URLFor(gameday.Operator), "--author", "olga")
	require.Equal(t, 0, code, errOut)
	n := <-c.Actions()
	require.Equal(t, "paged the database team", n.Note)
	require.Equal(t, "olga (operator)", n.Author)
	_, errOut, code = chaoslab(t, "gameday", "note", "hi", "--url", s.URLFor(gameday.Viewer))
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "may only watch")
	_, errOut, code = chaoslab(t, "gameday", "control", "hold", "--url", "http://127.0.0.1:1/")
	require.Equal(t, exitInput, code)
	require.Contains(t, errOut, "want the dashboard's URL as the run printed it")
}

// A dashboard served over TLS (--listen, --tls) is reached with the run's
// certificate; without it the client refuses the unknown certificate.
func TestActOverTLS(t *testing.T) {
	c := gameday.NewControls(nil)
	s, err := gameday.ListenAt("127.0.0.2:0", true, gameday.NewHub(), c)
	require.NoError(t, err)
	defer s.Close(context.Background())
	cert := filepath.Join(t.TempDir(), gameday.CertFile)
	require.NoError(t, os.WriteFile(cert, s.CertPEM, 0o644))
	_, errOut, code := chaoslab(t, "gameday", "note", "over TLS", "--url", s.URLFor(gameday.Operator), "--cert", cert, "--author", "ann")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "over TLS", (<-c.Actions()).Note)
	_, errOut, code = chaoslab(t, "gameday", "note", "no cert", "--url", s.URLFor(gameday.Operator))
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "certificate")
}
