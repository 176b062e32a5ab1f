package lab

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"time"
	"unicode"
)

// Bounds every plug-in's settings share. A setting's own bound lives
// where the setting is declared; these are the ones that come from the
// machine, the kernel or the container engine rather than from a plug-in.
const (
	// MinCPUs is the least CPU limit there is: the kernel's CFS quota
	// cannot go below 1 ms per 100 ms period, and the container engine
	// refuses less than 0.01 CPUs.
	MinCPUs = 0.01
	// MinContainerMemoryMB is the least memory limit the container engine
	// accepts (6 MB).
	MinContainerMemoryMB = 6
	// MinGoMemoryMB is the least memory a Go process of chaoslab starts
	// in (its runtime, its heap's first arenas and a ZooKeeper session).
	MinGoMemoryMB = 16
	// MaxDuration bounds any duration of a scenario: a variant is a replay
	// of an outage, not a soak test, and its series are held in memory.
	MaxDuration = 24 * time.Hour
	// MinRestartDelay is the least wait before an exited instance is
	// started again: a program that exits at once would otherwise be
	// restarted in a busy loop.
	MinRestartDelay = 100 * time.Millisecond
	// MaxInstances is the most client or server processes one workload
	// starts on one machine, beside the servers under test.
	MaxInstances = 200
)

// namePattern is the form of a name that becomes a folder, a cgroup, a
// container's name or a label: lower-case letters, digits and '-'.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// CheckName says what is wrong with a name that becomes part of a path, a
// cgroup or a container name ("" when nothing): lower-case letters,
// digits and '-', starting with a letter or a digit, at most max
// characters.
func CheckName(name string, max int) string {
	switch {
	case name == "":
		return "want a name (lower-case letters, digits and -)"
	case len(name) > max:
		return fmt.Sprintf("%q is %d characters, more than %d (it names folders, cgroups and containers, which the engine holds to 63 characters)", name, len(name), max)
	case !namePattern.MatchString(name):
		return fmt.Sprintf("%q: want lower-case letters, digits and - only, starting with a letter or a digit (it names folders, cgroups and containers; no /, no .., no spaces)", name)
	}
	return ""
}

// CheckLabel says what is wrong with a free-form name shown in reports
// that may also name a file ("" when nothing): no path separators, no
// "." or "..", no control characters, at most 64 characters.
func CheckLabel(name string) string {
	switch {
	case len(name) > 64:
		return fmt.Sprintf("%d characters, more than 64", len(name))
	case name == "." || name == ".." || strings.ContainsAny(name, `/\`):
		return fmt.Sprintf("%q: no / or \\ and not . or .. (it may name a file)", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Sprintf("%q: no control characters", name)
	}
	return ""
}

// envName is the form of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckEnvName says what is wrong with an environment variable's name ("" when nothing).
func CheckEnvName(name string) string {
	if !envName.MatchString(name) {
		return fmt.Sprintf("%q is not an environment variable's name (letters, digits and _, not starting with a digit)", name)
	}
	return ""
}

// CPUs is the number of CPUs of this machine: a CPU limit above it cannot
// be given (the container engine refuses it).
func CPUs() int { return runtime.NumCPU() }

// CheckCPUs says what is wrong with a CPU limit of this many cores, where
// zero may mean none ("" when nothing).
func CheckCPUs(cores float64, zeroIsNone bool) string {
	switch {
	case cores == 0 && zeroIsNone:
		return ""
	case !(cores >= MinCPUs):
		if zeroIsNone {
			return fmt.Sprintf("%g is below %g CPUs, the least the kernel's CPU quota and the container engine give (0 is no limit)", cores, MinCPUs)
		}
		return fmt.Sprintf("%g is below %g CPUs, the least the kernel's CPU quota and the container engine give", cores, MinCPUs)
	case cores > float64(CPUs()):
		return fmt.Sprintf("%g is more than the %d CPUs of this machine (the container engine refuses a limit above them)", cores, CPUs())
	}
	return ""
}

// CheckDuration says what is wrong with a duration that must lie in
// [least, MaxDuration] ("" when nothing).
func CheckDuration(d Duration, least time.Duration, why string) string {
	switch {
	case d.D() < least && least == 0:
		return fmt.Sprintf("%s is negative", d)
	case d.D() < least:
		return fmt.Sprintf("%s is below %s, %s", d, least, why)
	case d.D() > MaxDuration:
		return fmt.Sprintf("%s is more than %s (a replay of an outage, not a soak test)", d, MaxDuration)
	}
	return ""
}

// TopologyChecker is implemented by workload settings that must fit the
// servers they run against (a tree that must fit the servers' heap): the
// loader passes the variant's topology.
type TopologyChecker interface {
	CheckTopology(topology Settings) []Problem
}

// HeapSizer is implemented by a topology whose servers hold the data in a
// heap of this size (MiB).
type HeapSizer interface {
	ServerHeapMB() int
}

// WarmupChecker is implemented by settings that must fit the scenario's
// timeline (instances started over part of the warm-up): the loader
// passes the warm-up and the settings say what does not fit.
type WarmupChecker interface {
	CheckWarmup(warmup time.Duration) []Problem
}

// IneffectiveChecker is implemented by settings with keys that do nothing
// in some modes (a bound on reads in flight for a client that reads
// everything at once): the loader refuses such a key where a scenario
// writes it, with the reason and the setting that would do it, rather
// than let it be silently ignored.
type IneffectiveChecker interface {
	CheckIneffective() []Problem
}

// Msg records a problem when msg is not "".
func (c *Checks) Msg(field, msg string) {
	if msg != "" {
		*c = append(*c, Problem{Field: field, Msg: msg})
	}
}
