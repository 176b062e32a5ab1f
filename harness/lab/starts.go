package lab

// StartWatcher is implemented by a site that says, as each program
// starts, what it started (its process, its container), so that the run's
// journal names what a controller that died left behind.
type StartWatcher interface {
	WatchStarts(f func(p Program, proc Proc))
}

// ContainerIDer is implemented by a Proc that is a container: its
// engine's id.
type ContainerIDer interface {
	ContainerID() string
}

// NetworkIDer is implemented by a Site with a network of its own: the
// engine's id of the network.
type NetworkIDer interface {
	NetworkID() string
}

// SeriesSoFar is implemented by a workload that can copy the series it
// has recorded so far into r while it runs, without changing its state:
// the run's journal keeps them, so that a controller that dies loses
// none of them.
type SeriesSoFar interface {
	SeriesSoFar(r *Result)
}
