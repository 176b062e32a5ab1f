package lab

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"
)

// A Kind is a workload kind (zk-tree-mirror, kinesis-frontend, exec): its
// typed settings, what it records, and how it runs.
type Kind interface {
	Name() string
	// Systems are the systems it can run against.
	Systems() []string
	// NewSettings returns its settings with their defaults; the
	// scenario's workload (merged with a variant's) is decoded into it.
	NewSettings() Settings
	// Series and Metrics are what it records and what is derived from it.
	Series() []SeriesDef
	Metrics() []MetricDef
	// Groups are the fault target groups it offers (clients, fleet);
	// Probe is one of them as a fault sees it, for preflight checks.
	Groups() []string
	Probe(group string) Target
	// Noun names one of its instances and several, for reports
	// ("client", "clients").
	Noun() (one, many string)
	// New prepares the workload of one variant against a started cluster.
	New(env *Env, c Cluster, s Settings) (Workload, error)
}

// Mended is implemented by a kind whose program or measurement was
// mended after runs were kept, in a way that can change a verdict (a
// defect of chaoslab's own server, not of the incident's design): a run
// before since measured the defect too, so reproduction rates do not
// count it, passes and misses alike (what says what was mended).
type Mended interface {
	Mended() (since time.Time, what string)
}

// PlacementPreference is implemented by a kind whose scenarios were
// calibrated on one placement: auto placement picks it, and says why.
type PlacementPreference interface {
	PreferPlacement() (name, why string)
}

// Workload is one variant's running workload.
type Workload interface {
	// Seed writes the data the workload needs into the cluster.
	Seed(ctx context.Context) error
	// Start starts its programs; it returns once they are launched (a
	// spread start goes on in the background). The warm-up counts from
	// here.
	Start(ctx context.Context) error
	// Steady says how many of its instances are in their steady state
	// (loaded and fresh, routing); the warm-up waits for all of them.
	Steady() Steady
	// Targets are the members of a fault target group.
	Targets(group string) []Target
	// Progress is a few figures for a person watching.
	Progress() []slog.Attr
	// Stop ends every program it started and waits for them.
	Stop(ctx context.Context) error
	// Collect adds its series, computed metrics, instances and limits.
	Collect(r *Result, tl Timeline)
}

// Steady is how far a workload is from its steady state.
type Steady struct {
	Ready, Total int
	// What counts ("mirrors fresh", "servers routing").
	What string
}

// Agent is a program chaoslab runs as a process (or container) of its own:
// `chaoslab agent NAME --config JSON`. It prints its samples on stdout.
type Agent struct {
	Name string
	Doc  string
	Run  func(ctx context.Context, config json.RawMessage, stdout io.Writer, log *slog.Logger) error
}

// Preflighter is implemented by a kind that can tell before anything
// starts that its settings cannot run on a placement.
type Preflighter interface {
	Preflight(p Placement, s Settings) error
}

// ClientProgram is a user's client program, run in place of a kind's own
// agent: any program, in any language, judged from the outside.
type ClientProgram struct {
	// Name names the client in reports (default: the command's base name).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Command is the program and its arguments on the local placement; on
	// the docker placement the command run in Image (empty: the image's own).
	Command []string `yaml:"command,omitempty" json:"command,omitempty"`
	// Image is the client's image on the docker placement.
	Image string `yaml:"image,omitempty" json:"image,omitempty"`
	// Env is more environment for every instance, after CHAOSLAB_*.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
}

// Check validates a client program.
func (c *ClientProgram) Check() []Problem {
	var ps Checks
	ps.Need(len(c.Command) > 0 || c.Image != "", "command", "a client program needs a command (local) or an image (docker)")
	ps.Need(len(c.Command) == 0 || c.Command[0] != "", "command[0]", "want the program, not an empty word")
	if c.Name != "" {
		ps.Msg("name", CheckLabel(c.Name))
	}
	for k := range c.Env {
		ps.Msg("env."+k, CheckEnvName(k))
	}
	return ps
}

// Program is the program of one instance with its environment.
func (c *ClientProgram) Program(env map[string]string) Program {
	p := Program{Command: c.Command, Image: c.Image}
	for _, m := range []map[string]string{env, c.Env} {
		for k, v := range m {
			p.Env = append(p.Env, k+"="+v)
		}
	}
	return p
}

// ClientHost is implemented by settings that can run a user's client
// program in place of the kind's own (chaoslab run --client); Contract
// says what that program is told, must do and is judged by
// (chaoslab show ID --contract).
type ClientHost interface {
	SetClient(c *ClientProgram)
	Contract() Contract
}

// Required is implemented by settings a kind cannot run without setting
// (an exec program's command): a new scenario's skeleton writes these
// lines, each a YAML line of the workload, with a comment.
type Required interface {
	Required() []string
}

// InlineClient is implemented by a ClientHost whose program fields are
// the workload's own (the exec kind's command, image, env): a user's
// client replaces them in place rather than under program.
type InlineClient interface {
	InlineClient()
}

// Contract is what a kind asks of a user's program that takes the place of
// its own, and how the program is judged.
type Contract struct {
	// Role is what the program is in the scenario ("a front-end server").
	Role string `json:"role"`
	// Env is what every instance is told in its environment.
	Env []EnvVar `json:"env"`
	// Must is what the program must do for the lab to drive and judge it.
	Must []string `json:"must"`
	// Measured is what the lab measures of it from the outside.
	Measured []string `json:"measured"`
	// NotMeasured are the kind's metrics that only its own client reports
	// (a latency timed inside the app): with a user's program they are not
	// measured, and hypotheses on them are judged only if they are.
	NotMeasured []string `json:"not_measured,omitempty"`
	// Judged, when set, are the only metrics that judge a user's program:
	// a run with one leaves out the scenario's hypotheses and comparisons
	// on other metrics (they are about the lab's side of the scenario,
	// which no program of the user's changes).
	Judged []string `json:"judged,omitempty"`
	// NotJudged are prefixes of metrics (cluster.) that never judge a
	// user's program, whatever scenario the kind runs: a run with one
	// leaves out the hypotheses on them (a rolling replacement's quorum is
	// the operator's, not the client's).
	NotJudged []string `json:"not_judged,omitempty"`
	// Examples are programs that keep the contract, from the repository's root.
	Examples []string `json:"examples,omitempty"`
}

// EnvVar is one variable of a contract's environment.
type EnvVar struct {
	Name string `json:"name"`
	What string `json:"what"`
}
