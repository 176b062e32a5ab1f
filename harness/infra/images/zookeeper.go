package images

import (
	"archive/tar"
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

//go:embed zk-entrypoint.sh
var zkEntrypoint string

//go:embed zkCli.sh
var zkCli string

// zkPackages are installed into the root file system (and their
// dependencies, without recommends: no desktop Java). servlet-api is for
// the AdminServer, slf4j-simple for a log at all.
var zkPackages = []string{"openjdk-17-jre-headless", "libzookeeper-java", "libslf4j-java", "libservlet-api-java"}

// zkMmdebstrapArgs are mmdebstrap's options except the mirrors, the
// staging directory and the output.
func zkMmdebstrapArgs() []string {
	// openjdk's postinst needs the man1 directory to put its
	// alternatives' manual links in.
	return debianArgs(zkPackages, `--setup-hook=mkdir -p "$1"/usr/share/man/man1`)
}

// zkCleanupHook leaves no mirror in the image: empty sources, no package
// lists and no package cache (apt-get update needs sources added first).
const zkCleanupHook = `--customize-hook=rm -rf ` + scrubMirrors

func zkSpec() *spec {
	return &spec{
		Name: "zookeeper", Repo: "chaoslab/zookeeper", Tag: ZooKeeperVersion + "-deb12", Version: ZooKeeperVersion + "-deb12",
		// The official image's defaults, but every four-letter word is
		// allowed (the harness reads mntr; the official default is srvr).
		Env: [][2]string{
			{"PATH", defaultPath},
			{"LANG", "C.UTF-8"},
			{"ZOO_CONF_DIR", "/conf"},
			{"ZOO_DATA_DIR", "/data"},
			{"ZOO_DATA_LOG_DIR", "/datalog"},
			{"ZOO_LOG_DIR", "/logs"},
			{"ZOO_TICK_TIME", "2000"},
			{"ZOO_INIT_LIMIT", "5"},
			{"ZOO_SYNC_LIMIT", "2"},
			{"ZOO_AUTOPURGE_PURGEINTERVAL", "0"},
			{"ZOO_AUTOPURGE_SNAPRETAINCOUNT", "3"},
			{"ZOO_MAX_CLIENT_CNXNS", "60"},
			{"ZOO_STANDALONE_ENABLED", "true"},
			{"ZOO_ADMINSERVER_ENABLED", "true"},
			{"ZOO_4LW_COMMANDS_WHITELIST", "*"},
		},
		Expose:     []string{"2181", "2888", "3888", "8080"},
		Workdir:    "/",
		Entrypoint: []string{"/usr/local/bin/zk-entrypoint"},
		Cmd:        []string{"zkServer.sh", "start-foreground"},
		Labels: [][2]string{
			{"org.opencontainers.image.title", "zookeeper"},
			{"org.opencontainers.image.version", ZooKeeperVersion},
			{"org.opencontainers.image.description", "ZooKeeper " + ZooKeeperVersion + " from Debian " + DebianSuite + "'s libzookeeper-java on openjdk-17-jre-headless (mmdebstrap)"},
		},
	}
}

func (b *builder) zookeeperPlan() (*plan, error) {
	s := zkSpec()
	p := &plan{spec: s, hash: s.inputHash(DebianSuite, strings.Join(zkMmdebstrapArgs(), "\n"), zkCleanupHook, zkEntrypoint, zkCli)}
	p.make = func(ctx context.Context) error { return b.buildZooKeeper(ctx, s, p.hash) }
	return p, nil
}

func (b *builder) buildZooKeeper(ctx context.Context, s *spec, hash string) error {
	work, mirrors, err := debianWork(ctx, b, "zookeeper")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	// What the image gets besides packages: the entrypoint, zkCli.sh, the
	// official image's /docker-entrypoint.sh name for it, and its
	// directories. The staging root's mode becomes the image's / mode.
	stage := filepath.Join(work, "stage")
	for _, d := range []string{"usr/local/bin", "conf", "data", "datalog", "logs"} {
		if err := os.MkdirAll(filepath.Join(stage, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	for name, text := range map[string]string{"zk-entrypoint": zkEntrypoint, "zkCli.sh": zkCli} {
		p := filepath.Join(stage, "usr/local/bin", name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	if err := os.Symlink("usr/local/bin/zk-entrypoint", filepath.Join(stage, "docker-entrypoint.sh")); err != nil {
		return err
	}

	args := append(zkMmdebstrapArgs(), "--customize-hook=sync-in "+stage+" /", zkCleanupHook)
	rootfs, err := b.mmdebstrap(ctx, "zookeeper", work, args, zkPackages, mirrors)
	if err != nil {
		return err
	}

	debs, err := checkRootfs(rootfs, mirrors.Hosts)
	if err != nil {
		return err
	}
	if v := debs["libzookeeper-java"]; !strings.HasPrefix(v, ZooKeeperVersion+"-") {
		return fmt.Errorf("the root file system has libzookeeper-java %q, not %s", v, ZooKeeperVersion)
	}

	importArgs := []string{"import", "--message", "chaoslab images: " + s.Ref() + " (mmdebstrap " + DebianSuite + ")"}
	changes := s.instructions(hash)
	for _, pkg := range []string{"libzookeeper-java", "openjdk-17-jre-headless"} {
		changes = append(changes, fmt.Sprintf("LABEL %s=%s", dockerQuote("org.chaoslab.deb."+pkg), dockerQuote(debs[pkg])))
	}
	for _, c := range changes {
		importArgs = append(importArgs, "--change", c)
	}
	importArgs = append(importArgs, rootfs, s.Ref())
	b.progressf("zookeeper: docker import %s", s.Ref())
	_, err = command{}.run(ctx, b.log, "docker", importArgs...)
	return err
}

// ensureMmdebstrap installs mmdebstrap with apt-get when it is missing
// (as root; else it says what to do).
func ensureMmdebstrap(ctx context.Context, b *builder) error {
	b.apt.Lock()
	defer b.apt.Unlock()
	if _, err := exec.LookPath("mmdebstrap"); err == nil {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("mmdebstrap is not installed: apt-get install -y mmdebstrap (as root)")
	}
	b.progressf("zookeeper: apt-get install -y mmdebstrap")
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	if _, err := (command{Env: env}).run(ctx, b.log, "apt-get", "install", "-y", "--no-install-recommends", "mmdebstrap"); err != nil {
		// The package lists may be missing or old.
		if _, err := (command{Env: env}).run(ctx, b.log, "apt-get", "update"); err != nil {
			return err
		}
		if _, err := (command{Env: env}).run(ctx, b.log, "apt-get", "install", "-y", "--no-install-recommends", "mmdebstrap"); err != nil {
			return err
		}
	}
	return nil
}

// checkRootfs reads the root file system's tarball: it fails if a file of
// APT's configuration, lists or cache names one of hosts (the mirrors must
// not be left in the image) or if a file ZooKeeper needs is missing, and
// returns the versions of the installed packages (from dpkg's status).
func checkRootfs(path string, hosts []string) (map[string]string, error) {
	return checkRootfsNeeds(path, hosts, []string{"usr/share/java/zookeeper.jar", "usr/share/java/servlet-api.jar",
		"usr/share/java/slf4j-simple.jar", "usr/bin/java", "usr/local/bin/zk-entrypoint"})
}

// checkRootfsNeeds is checkRootfs with the paths (relative, no leading
// slash) the image's program needs; a shell is always needed.
func checkRootfsNeeds(path string, hosts, paths []string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Bookworm's /bin is a link to /usr/bin (merged /usr), so the shell
	// is where the tarball says it is.
	need := map[string]bool{"usr/bin/sh": false}
	for _, p := range paths {
		need[p] = false
	}
	var debs map[string]string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		// A directory's name ends in a slash: a needed folder is named
		// without it.
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/"), "/")
		if _, ok := need[name]; ok {
			need[name] = true
		} else if name == "bin/sh" {
			need["usr/bin/sh"] = true // not merged /usr
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		switch {
		case name == "var/lib/dpkg/status":
			if debs, err = parseDpkgStatus(tr); err != nil {
				return nil, err
			}
		case strings.HasPrefix(name, "etc/apt/") || strings.HasPrefix(name, "var/lib/apt/") || strings.HasPrefix(name, "var/cache/apt/"):
			data, err := io.ReadAll(io.LimitReader(tr, 256<<20))
			if err != nil {
				return nil, err
			}
			for _, host := range hosts {
				if strings.Contains(string(data), host) {
					return nil, fmt.Errorf("the root file system's /%s names a mirror of this machine; it must not be left in the image", name)
				}
			}
		}
	}
	var missing []string
	for n, ok := range need {
		if !ok {
			missing = append(missing, "/"+n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the root file system lacks %s", strings.Join(missing, ", "))
	}
	if debs == nil {
		return nil, errors.New("the root file system has no /var/lib/dpkg/status")
	}
	return debs, nil
}

// parseDpkgStatus returns the version of every installed package.
func parseDpkgStatus(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	var pkg, ver string
	installed := false
	flush := func() {
		if pkg != "" && ver != "" && installed {
			out[pkg] = ver
		}
		pkg, ver, installed = "", "", false
	}
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
			flush()
		case strings.HasPrefix(l, "Package: "):
			pkg = strings.TrimSpace(l[len("Package: "):])
		case strings.HasPrefix(l, "Version: "):
			ver = strings.TrimSpace(l[len("Version: "):])
		case strings.HasPrefix(l, "Status: "):
			installed = strings.HasSuffix(strings.TrimSpace(l), " installed")
		}
	}
	flush()
	return out, sc.Err()
}

// debianWork readies a Debian image's build: mmdebstrap installed, this
// machine's APT mirrors of the suite, a work folder (remove it).
func debianWork(ctx context.Context, b *builder, name string) (string, Mirrors, error) {
	if err := ensureMmdebstrap(ctx, b); err != nil {
		return "", Mirrors{}, err
	}
	srcs, err := ReadAptSources("/")
	if err != nil {
		return "", Mirrors{}, fmt.Errorf("read the machine's APT sources: %w", err)
	}
	mirrors, err := DebianMirrors(srcs, DebianSuite)
	if err != nil {
		return "", Mirrors{}, err
	}
	work, err := os.MkdirTemp("", "chaoslab-image-"+name+"-")
	return work, mirrors, err
}

// mmdebstrap makes an image's root file system (work/rootfs.tar) of the
// suite with args (packages, hooks) from the mirrors, logging to
// work/mmdebstrap.log and telling its progress.
func (b *builder) mmdebstrap(ctx context.Context, name, work string, args, packages []string, mirrors Mirrors) (string, error) {
	rootfs := filepath.Join(work, "rootfs.tar")
	logf, err := os.Create(filepath.Join(work, "mmdebstrap.log"))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	args = append(append(args, DebianSuite, rootfs), mirrors.Lines...)
	b.progressf("%s: mmdebstrap %s with %s (from %d mirror(s) of this machine's APT sources; ~1 min)",
		name, DebianSuite, strings.Join(packages, ", "), len(mirrors.Lines))
	start := time.Now()
	stop := ticker(b.progress, name, "mmdebstrap", 20*time.Second)
	_, err = command{Log: logf}.run(ctx, b.log, "mmdebstrap", args...)
	stop()
	if err != nil {
		return "", fmt.Errorf("make the root file system: %w", err)
	}
	size := ""
	if fi, err := os.Stat(rootfs); err == nil {
		size = " (" + humanSize(fi.Size()) + ")"
	}
	b.progressf("%s: root file system made in %s%s", name, time.Since(start).Round(100*time.Millisecond), size)
	return rootfs, nil
}
