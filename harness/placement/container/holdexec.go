package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/infra/images"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// A user's program prepared ahead is held too: its container starts
// with chaoslab's own static binary, bind-mounted read-only at shimAt,
// as its entrypoint (`chaoslab agent hold-exec -- ARGV`), which says it
// holds as an agent does and, released, becomes the image's entrypoint
// and the program's command (same pid: signals reach the program).

// shimAt is where the shim is mounted in the container.
const shimAt = "/.chaoslab/chaoslab"

// shimEntrypoint runs the shim on the argv that follows it.
var shimEntrypoint = []string{shimAt, "agent", "hold-exec", "--"}

// holdUser is how a user's program's container starts held by the shim,
// or nil when there is no shim here (it is then only created).
func (s *Site) holdUser(ctx context.Context, prog lab.Program, img string) ([]testcontainers.ContainerCustomizer, error) {
	shim := s.p.shimBinary()
	if shim == "" {
		return nil, nil
	}
	argv, err := imageArgv(ctx, img, prog)
	if err != nil {
		return nil, err
	}
	if err := cachePages(shim); err != nil {
		return nil, fmt.Errorf("hold %s: %w", prog.Name, err)
	}
	bind := shim + ":" + shimAt + ":ro"
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithEntrypoint(shimEntrypoint...),
		testcontainers.WithCmd(argv...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.Binds = append(hc.Binds, bind) }),
	}, nil
}

// imageArgv is what the program's container runs, from the image's
// configuration.
func imageArgv(ctx context.Context, img string, prog lab.Program) ([]string, error) {
	cli, err := docker.Client(ctx)
	if err != nil {
		return nil, fmt.Errorf("inspect image %s: %w", img, err)
	}
	res, err := cli.ImageInspect(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("inspect image %s: %w", img, err)
	}
	var entry, cmd []string
	if res.Config != nil {
		entry, cmd = res.Config.Entrypoint, res.Config.Cmd
	}
	argv, err := heldArgv(entry, cmd, prog.Entrypoint, prog.Command)
	if err != nil {
		return nil, fmt.Errorf("hold %s: %w", prog.Name, err)
	}
	return argv, nil
}

// heldArgv is the argv the engine would run: the program's entrypoint,
// else the image's, followed by the program's command, else the image's
// (unless the entrypoint is the program's, as the engine does).
func heldArgv(imgEntry, imgCmd, entry, cmd []string) ([]string, error) {
	if len(entry) == 0 {
		entry = imgEntry
		if len(cmd) == 0 {
			cmd = imgCmd
		}
	}
	argv := append(append([]string(nil), entry...), cmd...)
	if len(argv) == 0 {
		return nil, errors.New("neither the image nor the program says what to run")
	}
	return argv, nil
}

// shimBinary is the static chaoslab binary that holds users' programs
// ("" when there is none: said once in the log).
func (p *Placement) shimBinary() string {
	p.shimOnce.Do(func() {
		var err error
		p.shim, err = findShim(p.opts.AgentBinary, p.opts.AgentArgs)
		if err != nil {
			p.log.Warn("users' programs prepared ahead are only created, not held: their containers start at the engine's pace", "err", err)
		}
	})
	return p.shim
}

// findShim is the agents' binary when it is chaoslab itself, else this
// executable, when it is static (it then runs in any image).
func findShim(agentBinary string, agentArgs []string) (string, error) {
	bin := agentBinary
	if bin == "" || len(agentArgs) > 0 {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find chaoslab binary: %w", err)
		}
		bin = exe
	}
	bin, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("find chaoslab binary: %w", err)
	}
	if strings.HasSuffix(bin, ".test") {
		return "", fmt.Errorf("find chaoslab binary: %s is a test binary", bin)
	}
	if err := images.CheckStatic(bin); err != nil {
		return "", fmt.Errorf("check binary: %w", err)
	}
	return bin, nil
}
