package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// NetworkDisconnector is a target that can be cut off its cluster's
// network and put back (a server of any placement: a local process cut
// off with nftables, a container taken off the run's network).
type NetworkDisconnector interface {
	Disconnect(ctx context.Context) error
	Reconnect(ctx context.Context) error
}

func init() {
	Register(func() Fault { return &Disconnect{ReconnectTimeout: Duration(30 * time.Second)} })
}

// Disconnect takes the target off the cluster's network for the duration,
// then reconnects it: its peers and clients lose it while it keeps running
// (a network partition of one member).
type Disconnect struct {
	// ReconnectTimeout bounds the reconnection.
	ReconnectTimeout Duration `yaml:"reconnect_timeout"`
}

// Check bounds the wait for the target to come back.
func (f *Disconnect) Check() []lab.Problem {
	var ps lab.Checks
	ps.Msg("reconnect_timeout", lab.CheckDuration(f.ReconnectTimeout, time.Second, "the least a server takes to start"))
	return ps
}

func (*Disconnect) Name() string { return "disconnect" }

func (*Disconnect) Available(t Target) error {
	if t == nil {
		return errors.New("disconnect: no target")
	}
	if _, ok := t.(NetworkDisconnector); !ok {
		return fmt.Errorf("disconnect: %s cannot be taken off its network", t.Name())
	}
	return nil
}

func (dc *Disconnect) Inject(ctx context.Context, t Target, d time.Duration) error {
	if err := dc.Available(t); err != nil {
		return err
	}
	n := t.(NetworkDisconnector)
	if err := n.Disconnect(ctx); err != nil {
		return fmt.Errorf("disconnect %s: %w", t.Name(), err)
	}
	proveCut(ctx, t)
	Sleep(ctx, d)
	// Reconnect even when the run is being interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dc.ReconnectTimeout.D())
	defer cancel()
	if err := n.Reconnect(rctx); err != nil {
		return fmt.Errorf("reconnect %s: %w", t.Name(), err)
	}
	return nil
}

// CutReader is a NetworkDisconnector that reads its cut back (nftables'
// rules, or the container's networks as the engine has them).
type CutReader interface {
	Disconnected() bool
}

func proveCut(ctx context.Context, t Target) {
	r, ok := t.(CutReader)
	switch {
	case !ok:
		Unverified(ctx, t, "%s's cut cannot be read back", t.Name())
	case r.Disconnected():
		Landed(ctx, t, "cut off, read back from its placement")
	default:
		Missed(ctx, t, "still connected, read back from its placement")
	}
}
