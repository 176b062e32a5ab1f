package docker

// What the lab's containers share: their removal, the run's networks,
// testcontainers-go's log sent to slog.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
)

// ErrNotRunning is returned when a member has no running container.
var ErrNotRunning = errors.New("not running")

// OpTimeout bounds the member operations that take no context.
const OpTimeout = 30 * time.Second

// RemoveMember removes a member's container c (if not nil; thawed first
// if paused) and any container called name, then waits until the log copy
// (if not nil) has ended.
func RemoveMember(ctx context.Context, c *Container, name string, logs *LogFollower) error {
	var errs []error
	if c != nil {
		if st, err := c.RunState(ctx); err == nil && st.Paused {
			_ = c.Unpause(ctx)
		}
		if err := c.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil && !IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := RemoveByName(ctx, name); err != nil {
		errs = append(errs, err)
	}
	if logs != nil {
		if err := logs.Wait(5 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("copy logs: %w", err))
		}
	}
	return errors.Join(errs...)
}

// RemoveByName force-removes a container (and its anonymous volumes) by
// name; a missing one is fine.
func RemoveByName(ctx context.Context, name string) error {
	cli, err := Client(ctx)
	if err != nil {
		return err
	}
	_, err = cli.ContainerRemove(ctx, name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !IsNotFound(err) {
		return err
	}
	return nil
}

// NewNetwork creates a bridge network labelled for run runID and the
// component.
func NewNetwork(ctx context.Context, runID, component string) (*testcontainers.DockerNetwork, error) {
	net, err := network.New(ctx, network.WithLabels(MergeLabels(Labels(runID), map[string]string{LabelComponent: component})))
	if err != nil {
		return nil, fmt.Errorf("create network: %w", err)
	}
	return net, nil
}

// SlogPrintf returns a testcontainers-go logger that sends its messages
// to l at debug level.
func SlogPrintf(l *slog.Logger) tclog.Logger { return printfLogger{l} }

type printfLogger struct{ l *slog.Logger }

func (p printfLogger) Printf(format string, args ...any) {
	p.l.Debug(strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "testcontainers")
}
