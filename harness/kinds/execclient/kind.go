// Package execclient is the exec workload kind: N instances of any
// program, in any language, against any system, judged from the outside
// (its processes as the kernel counts them, its requests as the servers
// count them) and by whatever it says on stdout in the line protocol.
package execclient

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaoslab/chaoslab/harness/infra/instances"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// KindName is the workload kind.
const KindName = "exec"

func init() { lab.RegisterKind(kind{}) }

// Settings are an exec workload's, each declared once here with its
// default in NewSettings.
type Settings struct {
	// The program: its command (local placement), its image and the
	// command run in it (docker placement), its name and environment.
	lab.ClientProgram `yaml:",inline"`
	// Instances is the number of processes (or containers) of the program.
	Instances int `yaml:"instances" json:"instances"`
	// StartSpread spreads their starts evenly over this span.
	StartSpread lab.Duration `yaml:"start_spread" json:"start_spread"`
	// MemoryLimitMB, PidsLimit and CPUs are each instance's kernel-enforced
	// limits (0 = none).
	MemoryLimitMB int     `yaml:"memory_limit_mb" json:"memory_limit_mb"`
	PidsLimit     int     `yaml:"pids_limit" json:"pids_limit"`
	CPUs          float64 `yaml:"cpus" json:"cpus"`
	// Restart starts an instance that exited again after RestartDelay.
	Restart      bool         `yaml:"restart" json:"restart"`
	RestartDelay lab.Duration `yaml:"restart_delay" json:"restart_delay"`
	// Settings are passed to every instance as CHAOSLAB_<NAME> (upper
	// case): what the scenario tells its clients, such as a key prefix.
	Settings map[string]string `yaml:"settings,omitempty" json:"settings,omitempty"`
	// ReadyFigure names a figure the program prints (line protocol) that
	// is above 0 once it is ready; the warm-up waits for it. Empty: an
	// instance is ready once it runs.
	ReadyFigure string `yaml:"ready_figure,omitempty" json:"ready_figure,omitempty"`
}

// NewSettings are the defaults.
func NewSettings() *Settings {
	return &Settings{Instances: 1, Restart: true, RestartDelay: lab.Duration(time.Second)}
}

// Required: the program to run.
func (s *Settings) Required() []string {
	return []string{"# Your program and its arguments (or image: on containers).", "command: [./my-client]"}
}

// InlineClient: the program's fields are the workload's own.
func (s *Settings) InlineClient() {}

// SetClient runs the user's program (chaoslab run --client).
func (s *Settings) SetClient(c *lab.ClientProgram) { s.ClientProgram = *c }

// MinPids is the least pids limit a program starts under (the Go
// runtime alone starts 4 or 5 threads, a JVM a dozen).
const MinPids = 4

// CheckWarmup: the instances start over start_spread, within the warm-up.
func (s *Settings) CheckWarmup(warmup time.Duration) []lab.Problem {
	var c lab.Checks
	c.Need(s.StartSpread.D() <= warmup, "start_spread", "%s is longer than the warm-up (%s): instances would still be starting when the first fault hits", s.StartSpread, lab.Duration(warmup))
	return c
}

// Check validates the settings.
func (s *Settings) Check() []lab.Problem {
	c := lab.Checks(s.ClientProgram.Check())
	c.Need(s.Instances >= 1, "instances", "want at least 1, got %d", s.Instances)
	c.Need(s.Instances <= lab.MaxInstances, "instances", "%d instances is more than one machine runs beside the servers (%d processes)", s.Instances, lab.MaxInstances)
	c.Need(s.MemoryLimitMB >= 0, "memory_limit_mb", "want >= 0 (0 is no limit), got %d", s.MemoryLimitMB)
	c.Need(s.MemoryLimitMB <= 0 || s.MemoryLimitMB >= lab.MinContainerMemoryMB, "memory_limit_mb", "%d is below %d MiB, the least memory limit the container engine accepts (a program does not start in less)", s.MemoryLimitMB, lab.MinContainerMemoryMB)
	c.Need(s.PidsLimit >= 0, "pids_limit", "want >= 0 (0 is no limit), got %d", s.PidsLimit)
	c.Need(s.PidsLimit <= 0 || s.PidsLimit >= MinPids, "pids_limit", "%d is below %d: a program's runtime needs a few threads of its own to start", s.PidsLimit, MinPids)
	c.Msg("cpus", lab.CheckCPUs(s.CPUs, true))
	c.Msg("restart_delay", lab.CheckDuration(s.RestartDelay, 0, ""))
	c.Need(!s.Restart || s.RestartDelay.D() >= lab.MinRestartDelay, "restart_delay", "%s is below %s: a program that exits at once would be restarted in a busy loop", s.RestartDelay, lab.Duration(lab.MinRestartDelay))
	c.Msg("start_spread", lab.CheckDuration(s.StartSpread, 0, ""))
	for k := range s.Settings {
		c.Need(k != "" && !strings.HasPrefix(k, "_") && strings.Trim(strings.ToUpper(k), "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == "", "settings."+k,
			"a setting's name becomes CHAOSLAB_<NAME>: letters, digits and _ only")
	}
	return c
}

// Images: the program's image on a container placement.
func (s *Settings) Images() []lab.ImageNeed {
	if s.Image == "" {
		return nil
	}
	return []lab.ImageNeed{{Name: "user-client", Ref: s.Image, Defaults: []string{s.Image}}}
}

// Preflight: a command of this host runs only where host commands do.
func (kind) Preflight(p lab.Placement, st lab.Settings) error {
	s := st.(*Settings)
	if s.Image == "" && !lab.RunsHostCommands(p) {
		return fmt.Errorf("the exec workload's command runs on this host, which the %s placement cannot do: give its image (image:)", p.Name())
	}
	return nil
}

// Facts describe the workload in a report.
func (s *Settings) Facts() []lab.Fact {
	prog := strings.Join(s.Command, " ")
	if s.Image != "" {
		prog = strings.TrimSpace("image " + s.Image + " " + prog)
	}
	lim := []string{}
	if s.MemoryLimitMB > 0 {
		lim = append(lim, fmt.Sprintf("%d MiB", s.MemoryLimitMB))
	}
	if s.PidsLimit > 0 {
		lim = append(lim, fmt.Sprintf("%d pids", s.PidsLimit))
	}
	if s.CPUs > 0 {
		lim = append(lim, fmt.Sprintf("%g cores", s.CPUs))
	}
	if len(lim) == 0 {
		lim = append(lim, "none")
	}
	restart := "no"
	if s.Restart {
		restart = "yes, after " + s.RestartDelay.String()
	}
	keys := make([]string, 0, len(s.Settings))
	for k := range s.Settings {
		keys = append(keys, "CHAOSLAB_"+strings.ToUpper(k)+"="+s.Settings[k])
	}
	sort.Strings(keys)
	return []lab.Fact{{Name: "Kind", Value: KindName}, {Name: "Program", Value: prog},
		{Name: "Instances", Value: strconv.Itoa(s.Instances)}, {Name: "Limits per instance", Value: strings.Join(lim, ", ")},
		{Name: "Restart on exit", Value: restart}, {Name: "Settings", Value: strings.Join(keys, " ")}}
}

// kind is exec.
type kind struct{}

func (kind) Name() string              { return KindName }
func (kind) Systems() []string         { return lab.SystemNames() }
func (kind) NewSettings() lab.Settings { return NewSettings() }
func (kind) Groups() []string          { return []string{"clients"} }
func (kind) Probe(string) lab.Target   { return &instances.Target{} }
func (kind) Noun() (string, string)    { return "client", "clients" }

// SeriesFigures is the series pattern of the figures a program prints:
// "pending" becomes client.pending, per instance.
const SeriesFigures = "client.*"

func (kind) Series() []lab.SeriesDef {
	return append([]lab.SeriesDef{
		{Name: SeriesFigures, Title: "A figure the client prints (line protocol) or serves (Prometheus), per instance", Unit: ""},
	}, instances.Series()...)
}

func (kind) Metrics() []lab.MetricDef {
	return append(instances.Metrics(), []lab.MetricDef{
		{Name: "clients.requests.total", Unit: "requests", Doc: "requests the servers received from all instances (the servers' view, where the system lists its client connections)", ServerView: true},
		{Name: "clients.reconnects.total", Unit: "connections", Doc: "connections the instances opened beyond each incarnation's first (the servers' view)", ServerView: true},
		{Name: "clients.requests_per_s.max_from_fault", Unit: "requests/s", Doc: "from the first fault on, the most requests one instance sent the servers in a second (the servers' view)", ServerView: true},
	}...)
}
