package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// NetworkDisconnector is a target that can be taken off its cluster's
// network and put back (a container: docker network disconnect/connect).
type NetworkDisconnector interface {
	Disconnect(ctx context.Context) error
	Reconnect(ctx context.Context) error
}

func init() {
	Register(func() Fault { return &Disconnect{ReconnectTimeout: Duration(30 * time.Second)} })
}

// Disconnect takes the target off the cluster's network for the duration,
// then reconnects it: its peers and clients lose it while it keeps running
// (a network partition of one member). Only container targets support it.
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
		return fmt.Errorf("disconnect: %s cannot be taken off its network (container members can; local processes on loopback cannot)", t.Name())
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
	sleep(ctx, d)
	// Reconnect even when the run is being interrupted.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dc.ReconnectTimeout.D())
	defer cancel()
	if err := n.Reconnect(rctx); err != nil {
		return fmt.Errorf("reconnect %s: %w", t.Name(), err)
	}
	return nil
}
