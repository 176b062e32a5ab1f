package zookeeper

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// DefaultClasspath is what Debian's libzookeeper-java, libservlet-api-java
// and libslf4j-java install. zookeeper.jar's manifest pulls in the rest
// (jute, netty, jetty, slf4j-api, ...); servlet-api is needed by the
// AdminServer and slf4j-simple or the server logs nothing at all.
const DefaultClasspath = "/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar:/usr/share/java/slf4j-simple.jar"

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
	logger.Info("zookeeper: installing ZooKeeper", "missing", missing, "cmd", install)
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

// missingJars lists the classpath entries that do not exist.
func missingJars(cp string) []string {
	var missing []string
	for _, e := range filepath.SplitList(cp) {
		if _, err := os.Stat(strings.TrimSuffix(e, "*")); e != "" && err != nil {
			missing = append(missing, e)
		}
	}
	return missing
}
