// Package docker holds what chaoslab's container backends share: the
// labels that mark everything a run creates, Sweep to remove it, Available
// to ask whether a Docker engine answers, a check for local images, and
// FollowLogs to copy a container's output into the run folder.
//
// The backends use testcontainers-go. Its reaper, Ryuk, is a container that
// has to be pulled from a registry, which chaoslab's machines cannot reach,
// so this package disables it: its init sets TESTCONTAINERS_RYUK_DISABLED=true
// in the process environment unless the variable is already set (to any
// value). testcontainers-go reads its configuration once, on first use, and
// every package that starts containers imports this one, so the setting is
// in place in time. Without Ryuk nothing removes containers of a crashed
// process: every container, network and volume chaoslab creates carries
// LabelManaged and LabelRun, each backend's Close removes what it started,
// and a run begins with Sweep(ctx, "") to clean up after a crashed one.
//
// Everything here only talks to the local Docker engine; published ports
// are bound to 127.0.0.1 by the backends.
package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// RyukEnv is the variable that turns testcontainers-go's reaper off.
const RyukEnv = "TESTCONTAINERS_RYUK_DISABLED"

func init() {
	if _, set := os.LookupEnv(RyukEnv); !set {
		_ = os.Setenv(RyukEnv, "true")
	}
	// testcontainers-go prints a banner and its messages on stderr with
	// its own logger: they go to slog's default logger at debug level
	// (a run's log file), never to the console.
	tclog.SetDefault(defaultSlog{})
}

// defaultSlog is testcontainers-go's logger: slog's default logger as it
// is when a message comes, at debug level.
type defaultSlog struct{}

func (defaultSlog) Printf(format string, args ...any) {
	SlogPrintf(slog.Default()).Printf(format, args...)
}

// Labels on every container, network and volume chaoslab creates.
const (
	// LabelManaged is "true" on everything chaoslab manages.
	LabelManaged = "org.chaoslab.managed"
	// LabelRun holds the run id.
	LabelRun = "org.chaoslab.run"
	// LabelComponent names what a container is ("zookeeper", ...).
	LabelComponent = "org.chaoslab.component"
	// LabelMember names the cluster member ("zk1", ...).
	LabelMember = "org.chaoslab.member"
	// LabelOwner identifies the process that created it ("<pid>-<start>",
	// the start time in clock ticks since boot): SweepStale leaves alone
	// what a live process owns.
	LabelOwner = "org.chaoslab.owner"
)

// runIDPattern is what a run id may look like: it becomes part of
// container names, which Docker restricts to [a-zA-Z0-9][a-zA-Z0-9_.-]*.
var runIDPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// CheckRunID returns an error if id cannot be used as a run id.
func CheckRunID(id string) error {
	if !runIDPattern.MatchString(id) {
		return fmt.Errorf("check run id %q: want 1-63 of [a-zA-Z0-9_.-], starting with a letter or digit", id)
	}
	return nil
}

// Labels returns the labels for something created by run runID (runID ""
// gives LabelManaged alone). The map is new; callers may add to it.
func Labels(runID string) map[string]string {
	l := map[string]string{LabelManaged: "true"}
	if runID != "" {
		l[LabelRun] = runID
		if o := Owner(); o != "" {
			l[LabelOwner] = o
		}
	}
	return l
}

// MergeLabels returns a new map with the labels of all maps, later ones
// winning.
func MergeLabels(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// Filters selects everything of run runID (runID "": everything chaoslab
// manages), for the list calls of the Docker API.
func Filters(runID string) client.Filters {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	if runID != "" {
		f.Add("label", LabelRun+"="+runID)
	}
	return f
}

var (
	cliMu  sync.Mutex
	shared *testcontainers.DockerClient
)

// Client returns a Docker client shared by the process, created on first
// use the way testcontainers-go finds the engine (DOCKER_HOST,
// ~/.testcontainers.properties, the default socket). It is never closed.
func Client(ctx context.Context) (*testcontainers.DockerClient, error) {
	cliMu.Lock()
	defer cliMu.Unlock()
	if shared != nil {
		return shared, nil
	}
	c, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect docker: %w", err)
	}
	shared = c
	return c, nil
}

// DefaultPingTimeout bounds Available when ctx has no deadline.
const DefaultPingTimeout = 5 * time.Second

// Available returns nil if a Docker engine answers, or an error saying why
// not. It does not need a registry.
func Available(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultPingTimeout)
		defer cancel()
	}
	cli, err := Client(ctx)
	if err != nil {
		return fmt.Errorf("check docker: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("check docker: ping engine: %w", err)
	}
	return nil
}

// ImageExists reports whether the image ref is present on the local engine
// (nothing is pulled).
func ImageExists(ctx context.Context, ref string) (bool, error) {
	cli, err := Client(ctx)
	if err != nil {
		return false, fmt.Errorf("check image %s: %w", ref, err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("check image %s: %w", ref, err)
	}
	return true, nil
}

// ErrNoImage is returned by FirstImage when none of the images is present.
var ErrNoImage = errors.New("no image present")

// FirstImage returns the first of refs present on the local engine. Empty
// refs are skipped.
func FirstImage(ctx context.Context, refs ...string) (string, error) {
	var tried []string
	for _, ref := range refs {
		if ref == "" {
			continue
		}
		ok, err := ImageExists(ctx, ref)
		if err != nil {
			return "", err
		}
		if ok {
			return ref, nil
		}
		tried = append(tried, ref)
	}
	return "", fmt.Errorf("find image: %w (tried %v)", ErrNoImage, tried)
}

// IsNotFound reports whether err says a container, network, volume or
// image does not exist.
func IsNotFound(err error) bool { return cerrdefs.IsNotFound(err) }
