package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The test cluster of scripts/kube-up.sh: Kubernetes built from tools/kubernetes.
const (
	// KubeVersion: v1.34 is the last minor whose kubelet starts on cgroup
	// v1 by default (1.35 refuses it and expects containerd 2).
	KubeVersion = "v1.34.4"
	// PauseRef is the pod sandbox ("pause") image of the test cluster, a
	// FROM scratch image of tools/kubernetes/pause, made as a docker-save
	// archive for containerd (ctr images import), never in Docker.
	PauseRef = "chaoslab/pause:" + KubeVersion
)

// KubeBinaries are the test cluster's programs, in the order they are
// built (the first pays for most of the packages they share).
var KubeBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"}

// ErrNotBuilt is returned by KubernetesCached for a file that is not in
// the cache yet.
var ErrNotBuilt = errors.New("not built yet")

// KubeFiles are the test cluster's files in the cache.
type KubeFiles struct {
	Bin        map[string]string // KubeBinaries' name -> path
	PauseImage string            // a docker-save archive of PauseRef
}

// Kubernetes returns the test cluster's binaries and pause image, built
// for this machine from tools/kubernetes the first time (~12 min cold on 2
// cores, ~2 GB of modules) and from the cache afterwards, under the same
// lock per binary as every other build.
func Kubernetes(ctx context.Context, opts Options) (KubeFiles, error) {
	return kubernetes(ctx, opts, true)
}

// KubernetesCached is Kubernetes without building: an error wrapping
// ErrNotBuilt names the first file missing from the cache.
func KubernetesCached(ctx context.Context, opts Options) (KubeFiles, error) {
	return kubernetes(ctx, opts, false)
}

func kubernetes(ctx context.Context, opts Options, build bool) (KubeFiles, error) {
	files := KubeFiles{Bin: map[string]string{}}
	b, err := localBuilder(opts)
	if err != nil {
		return files, err
	}
	modDir, err := b.toolModule("kubernetes", "k8s.io/kubernetes", KubeVersion)
	if err != nil {
		return files, err
	}
	base, err := b.moduleInputs(ctx, modDir)
	if err != nil {
		return files, err
	}
	ld := kubeVersionFlags()
	inputs := hashOf(base, ld)
	get := func(t goTarget, inputs string) (string, error) {
		if !build {
			p := b.cachePath(t, inputs)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("%s %s: %w (scripts/kube-up.sh builds it)", t.Name, t.Version, ErrNotBuilt)
			}
			return p, nil
		}
		p, _, err := b.buildGo(ctx, "kubernetes", t, inputs)
		if err == nil {
			err = CheckStatic(p)
		}
		return p, err
	}
	for _, name := range KubeBinaries {
		t := goTarget{Name: name, Version: KubeVersion, ModDir: modDir, Package: "k8s.io/kubernetes/cmd/" + name, LDFlags: ld}
		if files.Bin[name], err = get(t, inputs); err != nil {
			return files, err
		}
	}
	pauseInputs, err := b.packageInputs(ctx, modDir, "./pause")
	if err != nil {
		return files, err
	}
	pause, err := get(goTarget{Name: "pause", Version: KubeVersion, ModDir: modDir, Package: "./pause"}, pauseInputs)
	if err != nil {
		return files, err
	}
	files.PauseImage = filepath.Join(b.cache, fmt.Sprintf("pause-image-%s-linux-%s-%s.tar", KubeVersion, b.arch, pauseInputs[:12]))
	if _, err := os.Stat(files.PauseImage); err == nil || !build {
		if err != nil {
			return files, fmt.Errorf("%s: %w", PauseRef, ErrNotBuilt)
		}
		return files, nil
	}
	return files, writePauseImage(files.PauseImage, pause, b.arch)
}

// kubeVersionFlags are the -X flags upstream's build sets, so that every
// component reports KubeVersion (kubelet registers its node with it).
func kubeVersionFlags() string {
	v := strings.TrimPrefix(KubeVersion, "v")
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	var fl []string
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fl = append(fl, "-X "+p+".gitVersion="+KubeVersion, "-X "+p+".gitMajor="+major,
			"-X "+p+".gitMinor="+minor, "-X "+p+".gitTreeState=clean")
	}
	return strings.Join(fl, " ")
}

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d %s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writePauseImage writes a docker-save archive (what `ctr images import`
// reads) of a FROM scratch image holding the pause binary as /pause, its
// entrypoint; the same binary gives the same archive byte for byte.
func writePauseImage(path, pause, arch string) error {
	bin, err := os.ReadFile(pause)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	if err := writeTar(&layer, tarFile{"pause", 0o755, bin}); err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer.Bytes())
	layerID := hex.EncodeToString(layerSum[:])
	config, _ := json.Marshal(map[string]any{
		"architecture": arch,
		"os":           "linux",
		"created":      epoch,
		"config":       map[string]any{"Entrypoint": []string{"/pause"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerID}},
		"history":      []map[string]any{{"created": epoch, "created_by": "chaoslab tools/kubernetes/pause"}},
	})
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, _ := json.Marshal([]map[string]any{{
		"Config": configName, "RepoTags": []string{PauseRef}, "Layers": []string{layerID + "/layer.tar"},
	}})

	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	defer os.Remove(tmp)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = writeTar(f, tarFile{configName, 0o644, config}, tarFile{layerID + "/layer.tar", 0o644, layer.Bytes()},
		tarFile{"manifest.json", 0o644, manifest})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

var epoch = time.Unix(0, 0).UTC()

type tarFile struct {
	name string
	mode int64
	data []byte
}

// writeTar writes the files as a tar archive, dated epoch.
func writeTar(w io.Writer, files ...tarFile) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}
