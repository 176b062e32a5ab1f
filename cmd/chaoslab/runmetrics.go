package main

import (
	"context"
	"fmt"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/runner"
)

// serveRunMetrics serves the series of every run o starts for Prometheus
// on addr (--metrics-addr, loopback only). It returns the function that
// waits for a run's last samples and the one that stops serving.
func serveRunMetrics(ctx context.Context, con *runConsole, o *runner.Options, addr string) (settle, stop func(), err error) {
	hub := gameday.NewHub()
	exp, err := gameday.ServeMetrics(addr, hub)
	if err != nil {
		return nil, nil, errInput(fmt.Errorf("--metrics-addr: %w", err))
	}
	con.con.Println("metrics for Prometheus: " + exp.URL())
	return gameday.Follow(ctx, o, hub), func() { _ = exp.Close(context.Background()) }, nil
}
