package lab

import (
	"context"
	"errors"
)

// Target is what a fault acts on: a member of a cluster, or a group of a
// workload (its clients, its fleet). Every method acts only on a process
// or container the harness started itself.
type Target interface {
	Name() string
	Pause() error
	Resume() error
	Kill() error
	Restart(ctx context.Context) error
}

// Stopper is a target an operator can stop and start again on demand:
// while stopped, its supervisor does not bring it back (clients scaled
// down, not crashed).
type Stopper interface {
	Stop() error
	Start(ctx context.Context) error
}

// ErrStopTimeline is wrapped by a fault's error when the procedure the
// timeline stands for stops there (an operator's gate that did not pass):
// the runner records it and injects no later fault step, and it is not
// the lab's failure.
var ErrStopTimeline = errors.New("the procedure stops here")
