package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The FROM scratch images: static Go binaries and little else.

// toolModule returns tools/<name> of the source tree after checking that its
// go.mod requires module at version (so that a label never lies).
func (b *builder) toolModule(name, module, version string) (string, error) {
	src, err := b.source()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(src, "tools", name)
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("the %s module: %w", name, err)
	}
	if !requires(string(data), module, version) {
		return "", fmt.Errorf("%s/go.mod does not require %s %s", dir, module, version)
	}
	return dir, nil
}

// requires reports whether a go.mod requires module at version (in a
// require block or a single require line).
func requires(gomod, module, version string) bool {
	for _, l := range strings.Split(gomod, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && f[0] == module && f[1] == version {
			return true
		}
	}
	return false
}

// goImage is a plan for a FROM scratch image of Go binaries built from one
// module: every binary is taken from the cache or built, checked to be
// static, and put where s says.
func (b *builder) goImage(s *spec, inputs string, targets []goTarget) *plan {
	for _, t := range targets {
		for i := range s.Files {
			if s.Files[i].Src == t.Name {
				s.Files[i].Src = b.cachePath(t, inputs)
			}
		}
	}
	p := &plan{spec: s, hash: s.inputHash(inputs)}
	p.make = func(ctx context.Context) error {
		for _, t := range targets {
			path, _, err := b.buildGo(ctx, s.Name, t, inputs)
			if err != nil {
				return err
			}
			if err := CheckStatic(path); err != nil {
				return err
			}
		}
		return b.dockerBuild(ctx, s, p.hash)
	}
	return p
}

func (b *builder) etcdPlan(ctx context.Context) (*plan, error) {
	modDir, err := b.toolModule("etcd", "go.etcd.io/etcd/server/v3", EtcdVersion)
	if err != nil {
		return nil, err
	}
	inputs, err := b.moduleInputs(ctx, modDir)
	if err != nil {
		return nil, err
	}
	targets := []goTarget{
		{Name: "etcd", Version: EtcdVersion, ModDir: modDir, Package: "go.etcd.io/etcd/server/v3"},
		{Name: "etcdctl", Version: EtcdVersion, ModDir: modDir, Package: "go.etcd.io/etcd/etcdctl/v3"},
		{Name: "etcdutl", Version: EtcdVersion, ModDir: modDir, Package: "go.etcd.io/etcd/etcdutl/v3"},
	}
	dirs, files := scratchBase()
	// As the official image: the binaries in /usr/local/bin, /var/etcd and
	// /var/lib/etcd (the working directory: etcd's default data directory
	// default.etcd lands there), ports 2379 and 2380. Unlike it, etcd is the
	// ENTRYPOINT (the official image sets CMD ["/usr/local/bin/etcd"]), so
	// arguments are etcd's flags.
	dirs = append(dirs, dir{Path: "/var/etcd", Mode: 0o755}, dir{Path: "/var/lib/etcd", Mode: 0o755})
	for _, t := range targets {
		files = append(files, file{Src: t.Name, Dst: "/usr/local/bin/" + t.Name, Mode: 0o755})
	}
	s := &spec{
		Name: "etcd", Repo: "chaoslab/etcd", Tag: EtcdVersion, Version: strings.TrimPrefix(EtcdVersion, "v"),
		Dirs: dirs, Files: files,
		Env:        [][2]string{{"PATH", defaultPath}},
		Expose:     []string{"2379", "2380"},
		Workdir:    "/var/lib/etcd",
		Entrypoint: []string{"/usr/local/bin/etcd"},
		Labels: [][2]string{
			{"org.opencontainers.image.title", "etcd"},
			{"org.opencontainers.image.version", EtcdVersion},
			{"org.opencontainers.image.licenses", "Apache-2.0"},
			{"org.opencontainers.image.description", "etcd, etcdctl and etcdutl " + EtcdVersion + ", static builds from source (chaoslab tools/etcd)"},
		},
	}
	return b.goImage(s, inputs, targets), nil
}

func (b *builder) consulPlan(ctx context.Context) (*plan, error) {
	modDir, err := b.toolModule("consul", "github.com/hashicorp/consul", "v"+ConsulVersion)
	if err != nil {
		return nil, err
	}
	inputs, err := b.moduleInputs(ctx, modDir)
	if err != nil {
		return nil, err
	}
	targets := []goTarget{{Name: "consul", Version: ConsulVersion, ModDir: modDir, Package: "github.com/hashicorp/consul"}}
	dirs, files := scratchBase()
	// As the official image: /bin/consul, /consul/data and /consul/config,
	// the same ports, and `agent -dev -client 0.0.0.0` by default. Unlike
	// it, there is no entrypoint script adding -data-dir=/consul/data
	// -config-dir=/consul/config to `agent`: pass them.
	dirs = append(dirs, dir{Path: "/consul/data", Mode: 0o755}, dir{Path: "/consul/config", Mode: 0o755})
	files = append(files, file{Src: "consul", Dst: "/bin/consul", Mode: 0o755})
	s := &spec{
		Name: "consul", Repo: "chaoslab/consul", Tag: ConsulVersion, Version: ConsulVersion,
		Dirs: dirs, Files: files,
		Env:        [][2]string{{"PATH", defaultPath}},
		Expose:     []string{"8300", "8301", "8301/udp", "8302", "8302/udp", "8500", "8600", "8600/udp"},
		Entrypoint: []string{"/bin/consul"},
		Cmd:        []string{"agent", "-dev", "-client", "0.0.0.0"},
		Labels: [][2]string{
			{"org.opencontainers.image.title", "consul"},
			{"org.opencontainers.image.version", ConsulVersion},
			{"org.opencontainers.image.licenses", "MPL-2.0"},
			{"org.opencontainers.image.description", "Consul " + ConsulVersion + ", a static build from source (chaoslab tools/consul)"},
		},
	}
	return b.goImage(s, inputs, targets), nil
}

func (b *builder) chaoslabPlan(ctx context.Context) (*plan, error) {
	src, err := b.source()
	if err != nil {
		return nil, err
	}
	tag := b.opts.ChaoslabTag
	if tag == "" {
		tag = DefaultChaoslabTag
	}
	inputs, err := b.packageInputs(ctx, src, "./cmd/chaoslab")
	if err != nil {
		return nil, err
	}
	targets := []goTarget{{Name: "chaoslab", Version: tag, ModDir: src, Package: "./cmd/chaoslab"}}
	dirs, files := scratchBase()
	files = append(files, file{Src: "chaoslab", Dst: "/chaoslab", Mode: 0o755})
	s := &spec{
		Name: "chaoslab", Repo: ChaoslabRepo, Tag: tag, Version: tag,
		Dirs: dirs, Files: files,
		Env:        [][2]string{{"PATH", defaultPath}},
		Entrypoint: []string{"/chaoslab"},
		Labels: [][2]string{
			{"org.opencontainers.image.title", "chaoslab"},
			{"org.opencontainers.image.description", "chaoslab, a static build of ./cmd/chaoslab, to run client workloads as containers"},
		},
	}
	return b.goImage(s, inputs, targets), nil
}

// cachePath is where buildGo keeps the binary of t built from inputs.
func (b *builder) cachePath(t goTarget, inputs string) string {
	return filepath.Join(b.cache, fmt.Sprintf("%s-%s-linux-%s-%s", t.Name, t.Version, b.arch, inputs[:12]))
}
