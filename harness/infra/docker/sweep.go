package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/infra/owner"
)

// Swept lists what Sweep removed (container and network names, volume
// names), and the networks the engine kept although nothing was attached
// to them (Stuck).
type Swept struct {
	Containers []string
	Networks   []string
	Volumes    []string
	// Stuck are networks with no container that the engine still refused
	// to remove after retries ("has active endpoints"): its endpoint count
	// went stale, an engine defect (moby/moby#42119) that only restarting
	// the engine clears. Not an error of the run: nothing of it runs there.
	Stuck []string
}

// Empty reports whether nothing was removed.
func (s Swept) Empty() bool {
	return len(s.Containers)+len(s.Networks)+len(s.Volumes) == 0
}

func (s Swept) String() string {
	return fmt.Sprintf("%d containers %v, %d networks %v, %d volumes %v",
		len(s.Containers), s.Containers, len(s.Networks), s.Networks, len(s.Volumes), s.Volumes)
}

// Sweep removes every container (running, paused or stopped, with its
// anonymous volumes), then every network and volume labelled with run
// runID; runID "" removes everything chaoslab manages (LabelManaged), which
// is what a run does first to clean up after a crashed one. It goes on past
// failures and returns them joined; something already gone is no failure.
func Sweep(ctx context.Context, runID string) (Swept, error) {
	var out Swept
	cli, err := Client(ctx)
	if err != nil {
		return out, fmt.Errorf("sweep: %w", err)
	}
	f := Filters(runID)
	var errs []error

	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return out, fmt.Errorf("sweep: list containers: %w", err)
	}
	for _, c := range cs.Items {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			out.Containers = append(out.Containers, name)
		case !IsNotFound(err):
			errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
		}
	}

	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list networks: %w", err))
	} else {
		for _, n := range ns.Items {
			err := removeNetwork(ctx, cli, n.ID)
			switch {
			case err == nil:
				out.Networks = append(out.Networks, n.Name)
			case errors.Is(err, errStuck):
				out.Stuck = append(out.Stuck, n.Name)
			case !IsNotFound(err):
				errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			}
		}
	}

	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list volumes: %w", err))
	} else {
		for _, v := range vs.Items {
			_, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})
			switch {
			case err == nil:
				out.Volumes = append(out.Volumes, v.Name)
			case !IsNotFound(err):
				errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("sweep: %w", err)
	}
	return out, nil
}

var errStuck = errors.New("the engine keeps a stale endpoint count for a network with no container (moby/moby#42119): restarting the engine clears it")

// removeNetwork removes a network, waiting up to networkSettle for the
// engine to finish tearing down the endpoints of containers just removed;
// errStuck when it still has "active endpoints" with no container.
func removeNetwork(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	deadline := time.Now().Add(networkSettle)
	for {
		_, err := cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			n, ierr := cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
			if ierr == nil && len(n.Network.Containers) == 0 {
				return errStuck
			}
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// networkSettle is how long a network's removal is retried while the
// engine still counts endpoints of removed containers.
const networkSettle = 10 * time.Second

// Leftovers lists the names of containers and networks of run runID that
// still exist (runID "": everything chaoslab manages).
func Leftovers(ctx context.Context, runID string) ([]string, error) {
	cli, err := Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("list leftovers: %w", err)
	}
	f := Filters(runID)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list leftovers: list containers: %w", err)
	}
	for _, c := range cs.Items {
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, "container "+name)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list leftovers: list networks: %w", err)
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	return out, nil
}

// Owner is this process's owner label value: "<pid>-<start time>".
func Owner() string { return owner.Label() }

// SweepStale removes what earlier runs left behind: every run whose owner
// process is gone (or unknown). Runs of live processes, such as another
// chaoslab run or a test on the same engine, are left alone.
func SweepStale(ctx context.Context) (Swept, error) {
	var out Swept
	cli, err := Client(ctx)
	if err != nil {
		return out, fmt.Errorf("sweep stale: %w", err)
	}
	f := Filters("")
	stale := map[string]bool{}
	consider := func(labels map[string]string) {
		run := labels[LabelRun]
		if run == "" {
			return
		}
		if o := labels[LabelOwner]; o == "" || !owner.Alive(o) {
			if _, seen := stale[run]; !seen {
				stale[run] = true
			}
		} else {
			stale[run] = false
		}
	}
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return out, fmt.Errorf("sweep stale: list containers: %w", err)
	}
	for _, c := range cs.Items {
		consider(c.Labels)
	}
	if ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
		for _, n := range ns.Items {
			consider(n.Labels)
		}
	}
	var errs []error
	for run, isStale := range stale {
		if !isStale {
			continue
		}
		sw, err := Sweep(ctx, run)
		out.Containers = append(out.Containers, sw.Containers...)
		out.Networks = append(out.Networks, sw.Networks...)
		out.Volumes = append(out.Volumes, sw.Volumes...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}
