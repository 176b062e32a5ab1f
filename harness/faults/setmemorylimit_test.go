package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/faults"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// pod is a target under a memory limit.
type pod struct {
	lab.Target
	limits []int64
}

func (p *pod) Name() string                 { return "agent-1" }
func (p *pod) MemoryLimit() int64           { return p.limits[len(p.limits)-1] }
func (p *pod) SetMemoryLimit(b int64) error { p.limits = append(p.limits, b); return nil }

// set-memory-limit raises the limit for its duration and puts the old one
// back; a target without a limit is refused before anything is done.
func TestSetMemoryLimit(t *testing.T) {
	f, err := faults.New("set-memory-limit")
	require.NoError(t, err)
	f.(*faults.SetMemoryLimit).MB = 200
	p := &pod{limits: []int64{100 << 20}}
	require.NoError(t, f.Available(p))
	require.NoError(t, f.Inject(context.Background(), p, 10*time.Millisecond))
	require.Equal(t, []int64{100 << 20, 200 << 20, 100 << 20}, p.limits)
	require.ErrorContains(t, f.Available(&pod{limits: []int64{0}}), "without a memory limit")
	require.Equal(t, "raise-memory-limit", faults.ResponderKind("set-memory-limit", "agents"))
	require.Equal(t, "leader-election", faults.ResponderKind("kill-restart", "leader"))
	require.Equal(t, "stop-clients", faults.ResponderKind("stop", "clients:50%"))
	require.Equal(t, "", faults.ResponderKind("stop", "leader"))

	f.(*faults.SetMemoryLimit).MB = 4
	require.NotEmpty(t, f.(faults.Checker).Check())
}
