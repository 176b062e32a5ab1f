package zkensemble

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"

	"github.com/chaoslab/chaoslab/harness/zkcheck"
)

// aptPackages provide java and the jars of DefaultClasspath (and nc, which
// is handy by hand: `echo mntr | nc -q1 127.0.0.1 PORT`).
var aptPackages = []string{"zookeeper", "netcat-openbsd", "libslf4j-java", "libservlet-api-java"}

var aptUpdate struct {
	sync.Mutex
	done bool
}

// EnsureInstalled checks that java is on PATH and that the jars of
// DefaultClasspath exist. If not and the process runs as root with apt-get
// available, it runs `apt-get update` (once per process) and
// `apt-get install -y zookeeper netcat-openbsd ...`, logging their output;
// otherwise it returns an error that says what to install.
func EnsureInstalled(ctx context.Context, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	missing := missingDeps()
	if len(missing) == 0 {
		return nil
	}
	install := "apt-get install -y " + strings.Join(aptPackages, " ")
	if os.Geteuid() != 0 {
		return fmt.Errorf("ensure installed: missing %s: run `%s` as root (ZooKeeper 3.8 and a Java 17 runtime)", strings.Join(missing, ", "), install)
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return fmt.Errorf("ensure installed: missing %s and no apt-get: install ZooKeeper 3.8 jars and a Java runtime by hand", strings.Join(missing, ", "))
	}
	logger.Info("zkensemble: installing ZooKeeper", "missing", missing, "cmd", install)
	aptUpdate.Lock()
	defer aptUpdate.Unlock()
	if !aptUpdate.done {
		if err := runLogged(ctx, logger, apt, "update"); err != nil {
			return fmt.Errorf("run apt-get update: %w", err)
		}
		aptUpdate.done = true
	}
	if err := runLogged(ctx, logger, apt, append([]string{"install", "-y"}, aptPackages...)...); err != nil {
		return fmt.Errorf("run apt-get install: %w", err)
	}
	if missing := missingDeps(); len(missing) > 0 {
		return fmt.Errorf("ensure installed: still missing after %s: %s", install, strings.Join(missing, ", "))
	}
	return nil
}

func missingDeps() []string {
	var missing []string
	if _, err := exec.LookPath("java"); err != nil {
		missing = append(missing, "java")
	}
	return append(missing, missingJars(DefaultClasspath)...)
}

// runLogged runs a command with its output sent line by line to logger.
func runLogged(ctx context.Context, logger *slog.Logger, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	w := &lineLogger{logger: logger, cmd: name + " " + args[0]}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	w.flush()
	return err
}

type lineLogger struct {
	mu     sync.Mutex
	logger *slog.Logger
	cmd    string
	buf    []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(l.buf[:i])); line != "" {
			l.logger.Info(line, "cmd", l.cmd)
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if line := strings.TrimSpace(string(l.buf)); line != "" {
		l.logger.Info(line, "cmd", l.cmd)
	}
	l.buf = nil
}

var versionRE = regexp.MustCompile(`version ([0-9][^\s,]*)`)

// Version returns the ZooKeeper version of the jars o would run (e.g.
// "3.8.0"), from org.apache.zookeeper.version.VersionInfoMain, falling back
// to the Debian package version of libzookeeper-java (e.g.
// "3.8.0-11+deb12u2"). A running member's own answer is Member.Version.
func Version(ctx context.Context, o Options) (string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return "", fmt.Errorf("get version: %w", err)
	}
	out, err := exec.CommandContext(ctx, o.Java, "-cp", o.Classpath, "org.apache.zookeeper.version.VersionInfoMain").CombinedOutput()
	if err == nil {
		if m := versionRE.FindSubmatch(out); m != nil {
			return string(m[1]), nil
		}
		err = fmt.Errorf("no version in %q", zkcheck.Truncate(string(out), 200))
	}
	dpkg, derr := exec.CommandContext(ctx, "dpkg-query", "-W", "-f", "${Version}", "libzookeeper-java").Output()
	if derr == nil && len(bytes.TrimSpace(dpkg)) > 0 {
		return string(bytes.TrimSpace(dpkg)), nil
	}
	return "", fmt.Errorf("get version: %w", err)
}
