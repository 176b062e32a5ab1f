package dockerconsul

import (
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/docker"
)

// loopback is the only host address ports are published on and dialled.
const loopback = docker.Loopback

// State is a container's state as the engine reports it (docker.State).
type State = docker.State

// WithMemoryLimit sets the container's memory limit (and memory+swap to
// the same, so no swap) in bytes.
func WithMemoryLimit(bytes int64) testcontainers.CustomizeRequestOption {
	return docker.WithMemoryLimit(bytes)
}

// WithCPULimit limits the container to cores CPUs (docker run --cpus).
func WithCPULimit(cores float64) testcontainers.CustomizeRequestOption {
	return docker.WithCPULimit(cores)
}

// WithPidsLimit limits the number of tasks in the container.
func WithPidsLimit(n int64) testcontainers.CustomizeRequestOption {
	return docker.WithPidsLimit(n)
}

// WithRunID labels the container as part of run runID (docker.LabelRun).
func WithRunID(runID string) testcontainers.CustomizeRequestOption {
	return docker.WithRunID(runID)
}
