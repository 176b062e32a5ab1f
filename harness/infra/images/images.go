// Package images builds chaoslab's container images on this machine, with
// no container registry: equivalents of the official ZooKeeper, etcd and
// Consul images, and an image of chaoslab itself for client workloads.
//
//   - chaoslab/zookeeper:3.8.0-deb12: a slim Debian bookworm root file
//     system made with mmdebstrap from the mirrors the machine's APT already
//     uses (read from its sources at run time and removed from the image),
//     with ZooKeeper and a headless JRE from Debian's packages and an
//     entrypoint that understands the official image's ZOO_* variables.
//   - chaoslab/etcd:v3.6.16 and chaoslab/consul:1.14.11: FROM scratch with
//     static binaries built from source (the Go modules under tools/ pin
//     them), cached by version and build inputs.
//   - chaoslab/postgres:15-deb12: the same way, Debian's postgresql-15
//     with an entrypoint that keeps the official image's first-run
//     contract (PGDATA, POSTGRES_USER, POSTGRES_HOST_AUTH_METHOD).
//   - chaoslab/chaoslab:dev: FROM scratch with a static build of
//     ./cmd/chaoslab.
//   - chaoslab/python:3.11-deb12 (built only when named: see Extra):
//     Debian's python3 and python3-kazoo, with the source tree's Python
//     examples under /examples, to run them as client containers.
//
// Every image is labelled with LabelImage and LabelVersion (the upstream
// version and a hash of the build inputs); Build skips an image whose label
// matches what it would build.
package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Versions and references of the images.
const (
	ZooKeeperVersion = "3.8.0" // Debian bookworm's libzookeeper-java
	DebianSuite      = "bookworm"
	EtcdVersion      = "v3.6.16"
	ConsulVersion    = "1.14.11" // the last MPL-2.0 line
	PostgresMajor    = "15"      // Debian bookworm's postgresql-15
	PythonVersion    = "3.11"    // Debian bookworm's python3

	ZooKeeperRef = "chaoslab/zookeeper:" + ZooKeeperVersion + "-deb12"
	EtcdRef      = "chaoslab/etcd:" + EtcdVersion
	ConsulRef    = "chaoslab/consul:" + ConsulVersion
	PostgresRef  = "chaoslab/postgres:" + PostgresMajor + "-deb12"
	PythonRef    = "chaoslab/python:" + PythonVersion + "-deb12"

	ChaoslabRepo       = "chaoslab/chaoslab"
	DefaultChaoslabTag = "dev"
)

// Names are the images Build makes when none is named, in the order it
// builds them.
var Names = []string{"zookeeper", "etcd", "consul", "postgresql", "chaoslab"}

// Extra are the images Build makes only when named: no run of the lab's
// own needs them, and CI's build of the default set is on its clock.
var Extra = []string{"python"}

// Known are every image Build can make: Names, then Extra.
func Known() []string { return append(slices.Clone(Names), Extra...) }

// Options of Build and List.
type Options struct {
	// Only builds these images (names from Known()); empty means Names.
	Only []string
	// Force rebuilds an image even when its label says it is up to date
	// (cached binaries are still used: delete CacheDir to rebuild those).
	Force bool
	// Logger gets the commands run (debug level); nil discards.
	Logger *slog.Logger
	// Progress gets one line per step, for a person waiting; nil discards.
	Progress io.Writer

	// SourceDir is chaoslab's source tree (default FindSourceDir()).
	SourceDir string
	// CacheDir is where built binaries are kept (default CacheDir()).
	CacheDir string
	// ChaoslabTag is the tag of the chaoslab image (default "dev").
	ChaoslabTag string
}

// Result describes one image.
type Result struct {
	Name    string // zookeeper, etcd, consul, chaoslab
	Ref     string // e.g. chaoslab/etcd:v3.6.16
	Version string // LabelVersion: what Build made or found up to date; what List found on the image
	ID      string // image ID
	Built   bool   // Build: true if built now, false if skipped (up to date)
	Size    int64  // bytes
	Took    time.Duration

	// List only.
	Present bool // the image exists
	Current bool // its LabelVersion matches the build inputs of this source tree
}

// ChaoslabRef is the reference of the chaoslab image for a tag ("" = dev).
func ChaoslabRef(tag string) string {
	if tag == "" {
		tag = DefaultChaoslabTag
	}
	return ChaoslabRepo + ":" + tag
}

// Ref returns the reference of the image called name ("" if unknown); the
// chaoslab image is named with DefaultChaoslabTag.
func Ref(name string) string {
	switch name {
	case "zookeeper":
		return ZooKeeperRef
	case "etcd":
		return EtcdRef
	case "consul":
		return ConsulRef
	case "postgresql":
		return PostgresRef
	case "python":
		return PythonRef
	case "chaoslab":
		return ChaoslabRef("")
	}
	return ""
}

// Build builds the images that are missing or out of date, in the order of
// Names, and reports on each. An image that fails does not stop the others
// (unless ctx ends): the results of those built or up to date come back
// with the errors joined.
func Build(ctx context.Context, opts Options) ([]Result, error) {
	names, err := selectNames(opts.Only)
	if err != nil {
		return nil, err
	}
	b, err := newBuilder(ctx, opts)
	if err != nil {
		return nil, err
	}
	// The images are built side by side: a root file system waits on the
	// network and the disk, a Go build on the CPU (and builds of the same
	// binary take turns under its lock).
	if _, err := b.goVersion(ctx); err != nil {
		return nil, err
	}
	res, errs := make([]Result, len(names)), make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.build(ctx, n)
			if err != nil {
				first, _, _ := strings.Cut(err.Error(), "\n")
				b.progressf("%s: FAILED after %s: %s", n, r.Took.Round(100*time.Millisecond), first)
				errs[i] = fmt.Errorf("image %s: %w", n, err)
				return
			}
			res[i] = r
		}()
	}
	wg.Wait()
	var out []Result
	for i := range names {
		if errs[i] == nil {
			out = append(out, res[i])
		}
	}
	return out, errors.Join(errs...)
}

// List reports on every image of the default set, and on the extras
// that are here: whether it exists, its size and version
// label, and whether that label matches the build inputs of this source
// tree (Current). It builds nothing and needs no network.
func List(ctx context.Context) ([]Result, error) { return ListWith(ctx, Options{}) }

// ListWith is List with options: Only, SourceDir, CacheDir, ChaoslabTag
// and Logger are used.
func ListWith(ctx context.Context, opts Options) ([]Result, error) {
	names, err := selectNames(opts.Only)
	if err != nil {
		return nil, err
	}
	// Without names, the extras that are here are listed too (a missing
	// one is not missing from the default set).
	extrasIfPresent := len(opts.Only) == 0
	if extrasIfPresent {
		names = Known()
	}
	b, err := newBuilder(ctx, opts)
	if err != nil {
		return nil, err
	}
	var out []Result
	var errs []error
	for _, n := range names {
		r := Result{Name: n, Ref: b.ref(n)}
		info, err := b.d.inspect(ctx, r.Ref)
		if err != nil {
			errs = append(errs, err)
		}
		if info == nil && extrasIfPresent && slices.Contains(Extra, n) {
			continue
		}
		if info != nil {
			r.Present, r.ID, r.Size, r.Version = true, info.ID, info.Size, info.Labels[LabelVersion]
		}
		p, err := b.plan(ctx, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("image %s: %w", n, err))
		} else if info != nil {
			r.Current = r.Version == p.spec.versionLabel(p.hash)
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

func selectNames(only []string) ([]string, error) {
	if len(only) == 0 {
		return slices.Clone(Names), nil
	}
	known := Known()
	var out []string
	for _, n := range only {
		n = strings.TrimSpace(strings.ToLower(n))
		if n == "" {
			continue
		}
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown image %q (known: %s)", n, strings.Join(known, ", "))
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	// Build in the usual order whatever the order asked.
	slices.SortFunc(out, func(a, b string) int { return slices.Index(known, a) - slices.Index(known, b) })
	return out, nil
}

// builder holds what every image's build needs.
type builder struct {
	opts     Options
	log      *slog.Logger
	progress io.Writer
	d        docker
	arch     string // the daemon's architecture, GOARCH of the binaries
	cache    string
	gover    string     // go env GOVERSION, once known
	apt      sync.Mutex // one apt-get at a time (mmdebstrap installed once)

	src    string // source tree, once found
	srcErr error
}

func newBuilder(ctx context.Context, opts Options) (*builder, error) {
	b := &builder{opts: opts, log: opts.Logger, progress: opts.Progress}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.progress == nil {
		b.progress = io.Discard
	}
	b.d = docker{log: b.log}
	arch, err := b.d.available(ctx)
	if err != nil {
		return nil, err
	}
	b.arch = arch
	b.cache = opts.CacheDir
	if b.cache == "" {
		if b.cache, err = CacheDir(); err != nil {
			return nil, err
		}
	}
	if opts.SourceDir != "" {
		b.src, err = filepath.Abs(opts.SourceDir)
		if err == nil && !isMainModule(b.src) {
			err = fmt.Errorf("%s: no go.mod of %s there", opts.SourceDir, MainModule)
		}
		b.srcErr = err
	} else {
		b.src, b.srcErr = FindSourceDir()
	}
	return b, nil
}

func (b *builder) progressf(format string, args ...any) {
	fmt.Fprintf(b.progress, format+"\n", args...)
}

// source returns the source tree, or why there is none.
func (b *builder) source() (string, error) { return b.src, b.srcErr }

func (b *builder) ref(name string) string {
	if name == "chaoslab" {
		return ChaoslabRef(b.opts.ChaoslabTag)
	}
	return Ref(name)
}

// plan is how to make one image: its spec, the hash of its build inputs
// and the function that builds it and tags it spec.Ref().
type plan struct {
	spec *spec
	hash string
	make func(ctx context.Context) error
}

func (b *builder) plan(ctx context.Context, name string) (*plan, error) {
	switch name {
	case "zookeeper":
		return b.zookeeperPlan()
	case "etcd":
		return b.etcdPlan(ctx)
	case "consul":
		return b.consulPlan(ctx)
	case "postgresql":
		return b.postgresPlan()
	case "python":
		return b.pythonPlan()
	case "chaoslab":
		return b.chaoslabPlan(ctx)
	}
	return nil, fmt.Errorf("unknown image %q", name)
}

func (b *builder) build(ctx context.Context, name string) (Result, error) {
	start := time.Now()
	r := Result{Name: name, Ref: b.ref(name)}
	fail := func(err error) (Result, error) {
		r.Took = time.Since(start)
		return r, err
	}
	p, err := b.plan(ctx, name)
	if err != nil {
		return fail(err)
	}
	want := p.spec.versionLabel(p.hash)
	r.Version = want
	old, err := b.d.inspect(ctx, r.Ref)
	if err != nil {
		return fail(err)
	}
	if old != nil && !b.opts.Force && old.Labels[LabelVersion] == want {
		r.ID, r.Size, r.Took = old.ID, old.Size, time.Since(start)
		b.progressf("%s: %s is up to date (%s, %s), skipped", name, r.Ref, want, humanSize(r.Size))
		return r, nil
	}
	switch {
	case old == nil:
		b.progressf("%s: building %s (%s)", name, r.Ref, want)
	case b.opts.Force:
		b.progressf("%s: rebuilding %s (--force)", name, r.Ref)
	default:
		b.progressf("%s: rebuilding %s: its inputs changed (%s -> %s)", name, r.Ref, old.Labels[LabelVersion], want)
	}
	if err := p.make(ctx); err != nil {
		return fail(err)
	}
	info, err := b.d.inspect(ctx, r.Ref)
	if err != nil {
		return fail(err)
	}
	if info == nil || info.Labels[LabelVersion] != want {
		return fail(fmt.Errorf("%s was not tagged with %s=%s after the build", r.Ref, LabelVersion, want))
	}
	if old != nil && old.ID != info.ID {
		b.d.removeIfUntagged(ctx, old.ID)
	}
	r.Built, r.ID, r.Size, r.Took = true, info.ID, info.Size, time.Since(start)
	b.progressf("%s: built %s in %s (%s)", name, r.Ref, r.Took.Round(100*time.Millisecond), humanSize(r.Size))
	return r, nil
}

// humanSize renders bytes as the docker CLI does (decimal units).
func humanSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// HumanSize renders bytes as the docker CLI does (for the CLI's tables).
func HumanSize(n int64) string { return humanSize(n) }

// dockerBuild builds a FROM scratch image from its spec: the build context
// is a temporary directory with the generated Dockerfile and the layer's
// files. The classic builder (DOCKER_BUILDKIT=0) needs no network for
// FROM scratch and leaves the image in the daemon's own store.
func (b *builder) dockerBuild(ctx context.Context, s *spec, hash string) error {
	dir, err := os.MkdirTemp("", "chaoslab-image-"+s.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := s.writeContext(dir, hash); err != nil {
		return err
	}
	b.progressf("%s: docker build -t %s (FROM scratch)", s.Name, s.Ref())
	_, err = command{Env: []string{"DOCKER_BUILDKIT=0"}}.run(ctx, b.log, "docker", "build",
		"--pull=false", "--rm", "--force-rm", "--network=none", "-t", s.Ref(), dir)
	return err
}

// scratchBase is what every FROM scratch image gets besides its binaries:
// a /tmp, and /etc files so that --user nobody and name lookups behave.
func scratchBase() ([]dir, []file) {
	dirs := []dir{{Path: "/tmp", Mode: 0o777 | os.ModeSticky}, {Path: "/etc", Mode: 0o755}}
	files := []file{
		{Dst: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n")},
		{Dst: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Dst: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
	}
	return dirs, files
}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
