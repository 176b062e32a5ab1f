package ebs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// A user's create-volume caller (Contract) runs as a program, one per
// zone, in place of the harness's own callers; what it does is counted at
// the control plane, as each of its calls is answered or given up.

// SetClient runs a user's create-volume caller in place of the harness's.
func (s *Settings) SetClient(c *lab.ClientProgram) { s.Program = c }

// Contract: a user's control-plane client (AWS-EBS-2011's create-volume
// callers), in place of the harness's own.
func (s *Settings) Contract() lab.Contract {
	return lab.Contract{
		Role: "a control-plane client: one process per zone calling create-volume on the regional control plane, with its own timeouts and retries (the long-waiting calls of 2011 are what filled the shared pool)",
		Env: []lab.EnvVar{
			{Name: "CHAOSLAB_CONTROL_URL", What: "the control plane's API, http://HOST:PORT (on containers its container's address on the run's network)"},
			{Name: "CHAOSLAB_ZONE", What: "the zone the process calls for (zone-a, zone-b, ...); CHAOSLAB_ZONE_INDEX its number (1, 2, ...)"},
			{Name: "CHAOSLAB_CREATE_RATE", What: "create-volume calls a second its users ask for (open loop: a call asked for is due whether or not the last one answered)"},
			{Name: "CHAOSLAB_CREATE_SLO_MS", What: "a call succeeds when the control plane answers it 200 within this long"},
			{Name: "CHAOSLAB_API_TIMEOUT_MS", What: "how long the control plane itself lets a call wait for a worker and for space before it answers 504"},
			{Name: "CHAOSLAB_SEED", What: "a seed for its random choices, derived from the run's"},
		},
		Must: []string{
			"call POST /v1/volumes with the JSON body {\"zone\": ZONE} about CHAOSLAB_CREATE_RATE times a second; a 200 answers with the volume, {\"id\": ...}",
			"delete each volume it created with DELETE /v1/volumes/ID (no worker is needed for it)",
			"choose its own timeout for a call (hanging up ends the call at the control plane and frees its worker), its retries and its back-off",
			"keep running until it is sent SIGTERM",
		},
		Measured: []string{
			"at the control plane, per zone, each create-volume call as it ends: answered 200 within CHAOSLAB_CREATE_SLO_MS (a success), answered otherwise, or given up by the caller; judged: the share of the other zones' calls that succeeded from the degraded zone's fault to the end",
			"the control plane's worker pools (busy, waiting), its timeouts, the volumes stuck and the free slots (the storage nodes' side, the same for every caller)",
			"the processes' exits",
		},
		NotMeasured: []string{"ebs.create_p99_ms.other_zones"},
		Judged:      []string{"ebs.create_success.other_zones", "ebs.create_success.degraded_zone", "ebs.pool_busy.max"},
		Examples:    []string{"examples/ebs-caller-python/caller.py (violated: waits as long as the API lets it and asks again at once)", "examples/ebs-caller-python/caller.py --deadline (held: a 1 s deadline, backing off with jitter)"},
	}
}

// program describes the create-volume callers in a report.
func (s *Settings) program() string {
	if s.Program == nil {
		return fmt.Sprintf("the harness's: %g calls/s from each zone, caller's timeout %s", s.CreateRate, s.CreateTimeout)
	}
	return "the user's, one process per zone: " + strings.TrimSpace(strings.Join(s.Program.Command, " ")+" "+s.Program.Image)
}

// Preflight: a user's caller that is a command of this host runs only
// where host commands do; on containers it runs from its image, on the
// run's network, where the control plane's address it is told is its
// container's.
func (kind) Preflight(p lab.Placement, s lab.Settings) error {
	if st := s.(*Settings); st.Program != nil && st.Program.Image == "" && !lab.RunsHostCommands(p) {
		return fmt.Errorf("your create-volume caller is a command of this host, which the %s placement cannot run: give its image too (--client-image, or program.image)", p.Name())
	}
	// The storage nodes mirror through the lab's link proxies, which
	// listen in the lab's own process.
	if err := lab.ReachesController(p); err != nil {
		return fmt.Errorf("the storage nodes reach each other through the lab's link proxies: %w", err)
	}
	return nil
}

// startPrograms starts the user's caller in every zone.
func (w *workload) startPrograms(ctx context.Context) {
	rng := w.env.Rand(2011)
	seeds := make([]uint64, len(w.zones))
	for i := range seeds {
		seeds[i] = rng.Uint64()
	}
	s := w.s
	w.group = instances.Start(ctx, instances.Config{
		Env: w.env, Count: len(w.zones), Prefix: "caller", Role: "create-volume-caller", Restart: true, RestartDelay: time.Second,
		Program: func(i, inc int) lab.Program {
			return s.Program.Program(map[string]string{
				"CHAOSLAB_CONTROL_URL": "http://" + w.apiAddr(), "CHAOSLAB_ZONE": w.zones[i].name, "CHAOSLAB_ZONE_INDEX": strconv.Itoa(i + 1),
				"CHAOSLAB_CREATE_RATE":    strconv.FormatFloat(s.CreateRate, 'g', -1, 64),
				"CHAOSLAB_CREATE_SLO_MS":  strconv.FormatInt(s.CreateSLO.D().Milliseconds(), 10),
				"CHAOSLAB_API_TIMEOUT_MS": strconv.FormatInt(s.RequestTimeout.D().Milliseconds(), 10),
				"CHAOSLAB_SEED":           strconv.FormatUint(seeds[i]+uint64(inc), 10),
			})
		},
	})
}
