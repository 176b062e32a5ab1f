package images

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// MainModule is the module path of chaoslab's source tree.
const MainModule = "github.com/chaoslab/chaoslab"

// FindSourceDir returns the root of chaoslab's source tree: $CHAOSLAB_SRC if
// set, else the nearest directory at or above the working directory whose
// go.mod declares MainModule. The server binaries are built from the
// modules under its tools/ directory.
func FindSourceDir() (string, error) {
	if d := os.Getenv("CHAOSLAB_SRC"); d != "" {
		if !isMainModule(d) {
			return "", fmt.Errorf("CHAOSLAB_SRC=%s: no go.mod of %s there", d, MainModule)
		}
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if d, ok := moduleAbove(wd); ok {
		return d, nil
	}
	// Run from elsewhere (a CI job in the user's repository): the tree the
	// running chaoslab was built in (scripts/setup.sh puts it in bin/).
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if d, ok := moduleAbove(filepath.Dir(exe)); ok {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("not inside chaoslab's source tree (no go.mod of %s at or above %s, nor above this chaoslab): run from the source tree or set CHAOSLAB_SRC", MainModule, wd)
}

// moduleAbove is the first folder at or above dir holding chaoslab's go.mod.
func moduleAbove(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if isMainModule(d) {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

func isMainModule(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(l, "module ")), `"`) == MainModule
		}
	}
	return false
}

// CacheDir is where built binaries are kept: $CHAOSLAB_CACHE if set, else
// $XDG_CACHE_HOME/chaoslab/bin, else ~/.cache/chaoslab/bin.
func CacheDir() (string, error) {
	if d := os.Getenv("CHAOSLAB_CACHE"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "chaoslab", "bin"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: set CHAOSLAB_CACHE (%w)", err)
	}
	return filepath.Join(home, ".cache", "chaoslab", "bin"), nil
}

// goTarget is one static Go binary to build.
type goTarget struct {
	Name    string // file name: etcd, etcdctl, consul, chaoslab
	Version string // for the cache file's name: v3.6.16, 1.14.11, dev
	ModDir  string // the module's directory (working directory of go build)
	Package string // what go build builds: go.etcd.io/etcd/server/v3, ./cmd/chaoslab
	LDFlags string // added to goBuildFlags' -ldflags (-X ...); the caller's inputs hash them
}

// goBuildFlags are the flags of every build: static, reproducible, small.
var goBuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// goEnv is the environment of every go command: no cgo (a static binary
// for FROM scratch), the daemon's architecture, no workspace, and go.mod
// and go.sum used as committed (never updated by a build).
func (b *builder) goEnv() []string {
	flags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -mod=readonly")
	return []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + b.arch, "GOWORK=off", "GOFLAGS=" + flags}
}

// goVersion is `go env GOVERSION` (part of every binary's build inputs).
func (b *builder) goVersion(ctx context.Context) (string, error) {
	if b.gover != "" {
		return b.gover, nil
	}
	out, err := command{Env: b.goEnv()}.run(ctx, b.log, "go", "env", "GOVERSION")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build the images: %w", err)
	}
	b.gover = strings.TrimSpace(out)
	return b.gover, nil
}

// moduleInputs hashes what a tools/ module's binaries are built from: its
// go.mod and go.sum (which pin every dependency), the Go version, the
// target platform and the flags.
func (b *builder) moduleInputs(ctx context.Context, modDir string) (string, error) {
	gover, err := b.goVersion(ctx)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s linux/%s %q\n", gover, b.arch, goBuildFlags)
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(modDir, f))
		if err != nil {
			return "", fmt.Errorf("build inputs: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// packageInputs hashes what a package of the main module is built from:
// every Go and embedded file of the main module's packages it depends on
// (go list -deps), go.mod and go.sum, the Go version, platform and flags.
func (b *builder) packageInputs(ctx context.Context, modDir, pkg string) (string, error) {
	base, err := b.moduleInputs(ctx, modDir)
	if err != nil {
		return "", err
	}
	out, err := command{Dir: modDir, Env: b.goEnv()}.run(ctx, b.log, "go", "list", "-deps",
		"-json=ImportPath,Dir,GoFiles,EmbedFiles,Module,Standard", pkg)
	if err != nil {
		return "", err
	}
	type pkgInfo struct {
		ImportPath string
		Dir        string
		GoFiles    []string
		EmbedFiles []string
		Standard   bool
		Module     *struct{ Main bool }
	}
	var files []string
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("go list: %w", err)
		}
		if p.Standard || p.Module == nil || !p.Module.Main {
			continue // pinned by go.sum / the Go version
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			files = append(files, filepath.Join(p.Dir, f))
		}
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", base, pkg)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(modDir, f)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// buildGo returns the path of the binary for t built from inputs (a hash),
// from the cache if it is there, else built now with go build and put in
// the cache (under a temporary name, renamed when complete, so that an
// interrupted build never leaves a broken binary). A lock per binary and
// version makes concurrent builds of it take turns: the later one finds
// the binary in the cache.
func (b *builder) buildGo(ctx context.Context, image string, t goTarget, inputs string) (path string, cached bool, err error) {
	if err := os.MkdirAll(b.cache, 0o755); err != nil {
		return "", false, err
	}
	path = b.cachePath(t, inputs)
	release, err := lockFile(ctx, filepath.Join(b.cache, fmt.Sprintf(".%s-%s.lock", t.Name, t.Version)), b.progress, image+": "+t.Name)
	if err != nil {
		return "", false, err
	}
	defer release()
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		b.progressf("%s: %s %s from the cache (%s)", image, t.Name, t.Version, path)
		return path, true, nil
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	defer os.Remove(tmp)
	start := time.Now()
	b.progressf("%s: building %s %s (go build %s)", image, t.Name, t.Version, t.Package)
	stop := ticker(b.progress, image, "go build "+t.Name, 30*time.Second)
	args := append([]string{"build"}, goBuildFlags...)
	if t.LDFlags != "" {
		// goBuildFlags ends with -ldflags; the go command takes the last one.
		args = append(args, goBuildFlags[len(goBuildFlags)-1]+" "+t.LDFlags)
	}
	args = append(args, "-o", tmp, t.Package)
	_, err = command{Dir: t.ModDir, Env: b.goEnv()}.run(ctx, b.log, "go", args...)
	stop()
	if err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, err
	}
	b.removeOld(t, path)
	fi, _ := os.Stat(path)
	b.progressf("%s: built %s in %s (%s)", image, t.Name, time.Since(start).Round(100*time.Millisecond), humanSize(fi.Size()))
	return path, false, nil
}

// removeOld removes older builds of the same binary and version (other
// inputs: the chaoslab binary changes with every edit) that were last
// built more than a day ago: a younger one may be another checkout's,
// whose tests are running its agents.
func (b *builder) removeOld(t goTarget, keep string) {
	olds, _ := filepath.Glob(filepath.Join(b.cache, fmt.Sprintf("%s-%s-linux-%s-*", t.Name, t.Version, b.arch)))
	for _, o := range olds {
		fi, err := os.Stat(o)
		if o == keep || strings.Contains(filepath.Base(o), ".tmp-") || err != nil || time.Since(fi.ModTime()) < 24*time.Hour {
			continue
		}
		os.Remove(o)
	}
}

// CheckStatic makes sure a binary has no ELF interpreter (dynamic loader):
// it then runs in any image of this architecture, FROM scratch too.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: dynamically linked (built with cgo?); it would not run in every image", path)
		}
	}
	return nil
}

// EtcdBinary returns the path of an etcd server binary for this machine,
// built from tools/etcd with go build (no Docker needed) and kept in the
// cache that the etcd image is built from. $CHAOSLAB_ETCD names a binary
// to use instead.
func EtcdBinary(ctx context.Context, opts Options) (string, error) {
	return localBinary(ctx, opts, "CHAOSLAB_ETCD", "etcd", "go.etcd.io/etcd/server/v3", EtcdVersion,
		goTarget{Name: "etcd", Version: EtcdVersion, Package: "go.etcd.io/etcd/server/v3"})
}

// ConsulBinary returns the path of a Consul agent (server and client)
// binary for this machine, built from tools/consul with go build (no
// Docker needed; ~4.5 min cold on 2 cores) and kept in the cache that the
// consul image is built from, so a binary `chaoslab images build` made is
// reused. $CHAOSLAB_CONSUL names a binary to use instead.
func ConsulBinary(ctx context.Context, opts Options) (string, error) {
	return localBinary(ctx, opts, "CHAOSLAB_CONSUL", "consul", "github.com/hashicorp/consul", "v"+ConsulVersion,
		goTarget{Name: "consul", Version: ConsulVersion, Package: "github.com/hashicorp/consul"})
}

// localBinary is EtcdBinary and ConsulBinary: the binary named by $env if
// set, else target t built from tools/<tool> (whose go.mod must require
// module at version) for this machine's architecture, from the cache under
// the same name as the image builds use (same module inputs, same flags).
func localBinary(ctx context.Context, opts Options, env, tool, module, version string, t goTarget) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return p, nil
	}
	b, err := localBuilder(opts)
	if err != nil {
		return "", err
	}
	modDir, err := b.toolModule(tool, module, version)
	if err != nil {
		return "", err
	}
	inputs, err := b.moduleInputs(ctx, modDir)
	if err != nil {
		return "", err
	}
	t.ModDir = modDir
	path, _, err := b.buildGo(ctx, tool, t, inputs)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", t.Name, err)
	}
	return path, nil
}

// ChaoslabBinary returns the path of a static chaoslab binary built from
// the source tree as it is now, the one the chaoslab image holds, from
// the cache when its inputs are unchanged: the built-in clients' agents
// on the local placement (tests, or a controller that is not chaoslab).
func ChaoslabBinary(ctx context.Context, opts Options) (string, error) {
	b, err := localBuilder(opts)
	if err != nil {
		return "", err
	}
	src, err := b.source()
	if err != nil {
		return "", err
	}
	inputs, err := b.packageInputs(ctx, src, "./cmd/chaoslab")
	if err != nil {
		return "", err
	}
	t := goTarget{Name: "chaoslab", Version: DefaultChaoslabTag, ModDir: src, Package: "./cmd/chaoslab"}
	path, _, err := b.buildGo(ctx, "chaoslab", t, inputs)
	if err != nil {
		return "", fmt.Errorf("build chaoslab: %w", err)
	}
	return path, nil
}

// localBuilder builds for this machine, without Docker.
func localBuilder(opts Options) (*builder, error) {
	b := &builder{opts: opts, log: opts.Logger, progress: opts.Progress, arch: runtime.GOARCH}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.progress == nil {
		b.progress = io.Discard
	}
	b.cache = opts.CacheDir
	if b.cache == "" {
		var err error
		if b.cache, err = CacheDir(); err != nil {
			return nil, err
		}
	}
	if opts.SourceDir != "" {
		b.src, b.srcErr = filepath.Abs(opts.SourceDir)
	} else {
		b.src, b.srcErr = FindSourceDir()
	}
	return b, nil
}
