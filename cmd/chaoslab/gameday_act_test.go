package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
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
			require.Equal(t, 0.1, f.(*faults.RemoveCapacity).Fraction)
		}},
		{[]string{"switch-strategy", "clients", "5s"}, map[string]string{"strategy": "paced", "window": "8"}, func(t *testing.T, f faults.Fault) {
			require.Equal(t, faults.SwitchStrategy{Strategy: "paced", Window: 8}, *f.(*faults.SwitchStrategy))
		}},
		{[]string{"raise-init-limit", "observers", "60s"}, map[string]string{"ticks": "30", "start_timeout": "90s"}, func(t *testing.T, f faults.Fault) {
			require.Equal(t, 30, f.(*faults.RaiseInitLimit).Ticks)
			require.Equal(t, "1m30s", f.(*faults.RaiseInitLimit).StartTimeout.D().String())
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
