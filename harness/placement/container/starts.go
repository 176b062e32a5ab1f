package container

import "github.com/chaoslab/chaoslab/harness/lab"

// WatchStarts has f told each program started here from now on.
func (s *Site) WatchStarts(f func(lab.Program, lab.Proc)) {
	s.mu.Lock()
	s.onStart = f
	s.mu.Unlock()
}

// NetworkID is the engine's id of the variant's network.
func (s *Site) NetworkID() string {
	if s.net == nil {
		return ""
	}
	return s.net.ID
}

// ContainerID is the engine's id of the container.
func (p *proc) ContainerID() string { return p.c.GetContainerID() }
