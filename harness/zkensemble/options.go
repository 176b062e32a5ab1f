package zkensemble

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultClasspath is what Debian's libzookeeper-java, libservlet-api-java
// and libslf4j-java install. zookeeper.jar's manifest pulls in the rest
// (jute, netty, jetty, slf4j-api, ...); servlet-api is needed by the
// AdminServer and slf4j-simple or the server logs nothing at all.
const DefaultClasspath = "/usr/share/java/zookeeper.jar:/usr/share/java/servlet-api.jar:/usr/share/java/slf4j-simple.jar"

// MaxServers is the largest ensemble Start accepts.
const MaxServers = 7

// MaxObservers is the most observers Start adds to the voting members:
// each is one more JVM of HeapMB on the same machine.
const MaxObservers = 5

// Options configures an ensemble. The zero value gives 3 members with
// ZooKeeper's usual timing (tickTime 2000, initLimit 10, syncLimit 5).
type Options struct {
	Servers int // 1..7, default 3; 1 runs a standalone server
	// Observers are non-voting members (peerType=observer) added after the
	// voting ones: zk<Servers+1>...; 0..MaxObservers, and only with at
	// least 2 voting members (a single server runs standalone).
	Observers      int
	TickMS         int // zoo.cfg tickTime, default 2000
	InitLimit      int // zoo.cfg initLimit in ticks, default 10
	SyncLimit      int // zoo.cfg syncLimit in ticks, default 5
	HeapMB         int // -Xmx, default 256
	MaxClientCnxns int // zoo.cfg maxClientCnxns per client IP (0 = unlimited)

	// Dir is the run folder: zoo.cfg and data in Dir/zkN/, logs in
	// Dir/logs/zkN.log. Nothing is removed by Close. Default: a new
	// directory under os.TempDir(). Dir/zkN/data must be absent or empty.
	Dir string

	Java      string // java binary, default "java" from PATH
	Classpath string // default DefaultClasspath; every entry must exist

	// JVMArgs are added before the main class (e.g. "-XX:+UseSerialGC").
	JVMArgs []string
	// Extra zoo.cfg keys (e.g. "cnxTimeout": "1000"), written after the
	// ones this package sets.
	Extra map[string]string

	Logger *slog.Logger // default slog.Default()
}

// withDefaults fills in defaults and checks the options and the installation.
func (o Options) withDefaults() (Options, error) {
	if o.Servers == 0 {
		o.Servers = 3
	}
	if o.Servers < 1 || o.Servers > MaxServers {
		return o, fmt.Errorf("check options: Servers=%d, want 1..%d", o.Servers, MaxServers)
	}
	if o.Observers < 0 || o.Observers > MaxObservers {
		return o, fmt.Errorf("check options: Observers=%d, want 0..%d", o.Observers, MaxObservers)
	}
	if o.Observers > 0 && o.Servers < 2 {
		return o, fmt.Errorf("check options: Observers=%d with Servers=%d: observers need at least 2 voting members (one server runs standalone)", o.Observers, o.Servers)
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{{"TickMS", &o.TickMS, 2000}, {"InitLimit", &o.InitLimit, 10}, {"SyncLimit", &o.SyncLimit, 5}, {"HeapMB", &o.HeapMB, 256}} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 0 {
			return o, fmt.Errorf("check options: %s=%d is negative", f.name, *f.v)
		}
	}
	if o.MaxClientCnxns < 0 {
		return o, fmt.Errorf("check options: MaxClientCnxns=%d is negative", o.MaxClientCnxns)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Java == "" {
		o.Java = "java"
	}
	java, err := exec.LookPath(o.Java)
	if err != nil {
		return o, fmt.Errorf("find java: %w (install a JRE, e.g. `apt-get install -y zookeeper`, or see EnsureInstalled)", err)
	}
	o.Java = java
	if o.Classpath == "" {
		o.Classpath = DefaultClasspath
	}
	if missing := missingJars(o.Classpath); len(missing) > 0 {
		return o, fmt.Errorf("check classpath: missing %s (install with `apt-get install -y zookeeper`, or see EnsureInstalled)", strings.Join(missing, ", "))
	}
	if o.Dir != "" {
		abs, err := filepath.Abs(o.Dir)
		if err != nil {
			return o, fmt.Errorf("resolve dir: %w", err)
		}
		o.Dir = abs
	}
	return o, nil
}

// members is the number of members, voting and observing.
func (o Options) members() int { return o.Servers + o.Observers }

// missingJars lists the classpath entries that do not exist. Wildcard
// entries ("dir/*") are checked as directories.
func missingJars(cp string) []string {
	var missing []string
	for _, e := range filepath.SplitList(cp) {
		if e == "" {
			continue
		}
		p := strings.TrimSuffix(e, "*")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, e)
		}
	}
	return missing
}
