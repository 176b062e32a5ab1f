package lab

import "context"

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
