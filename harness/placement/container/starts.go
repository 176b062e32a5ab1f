package container

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/lab"
)

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

// ControllerHost is the gateway of the variant's network: the machine's
// own address on the lab's bridge, where its containers reach a listener
// of the controller (lab.Controller).
func (s *Site) ControllerHost(ctx context.Context) (string, error) {
	cli, err := docker.Client(ctx)
	if err != nil {
		return "", err
	}
	res, err := cli.NetworkInspect(ctx, s.net.ID, client.NetworkInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect network: %w", err)
	}
	for _, c := range res.Network.IPAM.Config {
		if c.Gateway.IsValid() && c.Gateway.Is4() {
			return c.Gateway.String(), nil
		}
	}
	return "", fmt.Errorf("inspect network %s: no IPv4 gateway", s.net.Name)
}
