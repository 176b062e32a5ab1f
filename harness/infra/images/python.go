package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// pyPackages are installed into the root file system without recommends:
// the interpreter and kazoo, the one library beyond the standard one that
// the Python examples import.
var pyPackages = []string{"python3", "python3-kazoo"}

// PythonExamplesDir is where the python image holds the source tree's
// examples/*-python folders: a client container sees no file of this
// machine (a user's program is an image and a command), so the examples
// travel in the image, as a user's own program would in theirs.
const PythonExamplesDir = "/examples"

// pyMmdebstrapArgs are mmdebstrap's options except the mirrors, the
// staging directory and the output.
func pyMmdebstrapArgs() []string {
	return debianArgs(pyPackages)
}

// pyCleanupHook leaves no trace of the mirrors, as for the other Debian
// images.
const pyCleanupHook = `--customize-hook=rm -rf ` + scrubMirrors

func pySpec() *spec {
	return &spec{
		Name: "python", Repo: "chaoslab/python", Tag: PythonVersion + "-deb12", Version: PythonVersion + "-deb12",
		Env: [][2]string{
			{"PATH", defaultPath},
			{"LANG", "C.UTF-8"},
			// The examples print one JSON line a sample: unbuffered, a
			// sample reaches the lab when it is printed.
			{"PYTHONUNBUFFERED", "1"},
			{"PYTHONDONTWRITEBYTECODE", "1"},
		},
		Workdir: PythonExamplesDir,
		Cmd:     []string{"python3"},
		Labels: [][2]string{
			{"org.opencontainers.image.title", "python"},
			{"org.opencontainers.image.version", PythonVersion},
			{"org.opencontainers.image.description", "Python " + PythonVersion + " and kazoo from Debian " + DebianSuite + " (mmdebstrap), with chaoslab's Python examples under " + PythonExamplesDir},
		},
	}
}

func (b *builder) pythonPlan() (*plan, error) {
	src, err := b.source()
	if err != nil {
		return nil, err
	}
	examples, err := pythonExamples(src)
	if err != nil {
		return nil, err
	}
	s := pySpec()
	p := &plan{spec: s, hash: s.inputHash(DebianSuite, strings.Join(pyMmdebstrapArgs(), "\n"), pyCleanupHook, examples.hash)}
	p.make = func(ctx context.Context) error { return b.buildPython(ctx, s, p.hash, examples.dirs) }
	return p, nil
}

// examplesSet is the source tree's Python examples: their folders and a
// hash of their files (so that a change to an example rebuilds the image).
type examplesSet struct {
	dirs []string // absolute, sorted
	hash string
}

// pythonExamples finds examples/*-python in the source tree and hashes
// every regular file in them but Python's caches.
func pythonExamples(src string) (examplesSet, error) {
	dirs, err := filepath.Glob(filepath.Join(src, "examples", "*-python"))
	if err != nil {
		return examplesSet{}, err
	}
	sort.Strings(dirs)
	h := sha256.New()
	var set examplesSet
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		set.dirs = append(set.dirs, d)
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && e.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			if !e.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			return examplesSet{}, fmt.Errorf("hash examples: %w", err)
		}
	}
	if len(set.dirs) == 0 {
		return examplesSet{}, fmt.Errorf("no examples/*-python in %s", src)
	}
	set.hash = hex.EncodeToString(h.Sum(nil))
	return set, nil
}

// buildPython makes the root file system with mmdebstrap from the
// machine's own APT sources, with the examples synced in, and imports it.
func (b *builder) buildPython(ctx context.Context, s *spec, hash string, examples []string) error {
	work, mirrors, err := debianWork(ctx, b, "python")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	stage, err := stageExamples(work, examples)
	if err != nil {
		return err
	}
	args := append(pyMmdebstrapArgs(), "--customize-hook=sync-in "+stage+" /", pyCleanupHook)
	rootfs, err := b.mmdebstrap(ctx, "python", work, args, pyPackages, mirrors)
	if err != nil {
		return err
	}
	need := []string{"usr/bin/python3"}
	for _, d := range examples {
		need = append(need, strings.TrimPrefix(PythonExamplesDir, "/")+"/"+filepath.Base(d))
	}
	debs, err := checkRootfsNeeds(rootfs, mirrors.Hosts, need)
	if err != nil {
		return err
	}
	importArgs := []string{"import", "--message", "chaoslab images: " + s.Ref() + " (mmdebstrap " + DebianSuite + ")"}
	changes := s.instructions(hash)
	for _, pkg := range pyPackages {
		if debs[pkg] == "" {
			return fmt.Errorf("check root file system: no %s installed", pkg)
		}
		changes = append(changes, fmt.Sprintf("LABEL %s=%s", dockerQuote("org.chaoslab.deb."+pkg), dockerQuote(debs[pkg])))
	}
	for _, c := range changes {
		importArgs = append(importArgs, "--change", c)
	}
	importArgs = append(importArgs, rootfs, s.Ref())
	b.progressf("python: docker import %s", s.Ref())
	_, err = command{}.run(ctx, b.log, "docker", importArgs...)
	return err
}

// stageExamples copies the examples' folders to work/stage/examples/,
// which mmdebstrap syncs into the root file system; the staging root's
// mode becomes the image's / mode.
func stageExamples(work string, examples []string) (string, error) {
	stage := filepath.Join(work, "stage")
	into := filepath.Join(stage, strings.TrimPrefix(PythonExamplesDir, "/"))
	if err := os.MkdirAll(into, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return "", err
	}
	for _, d := range examples {
		if err := os.CopyFS(filepath.Join(into, filepath.Base(d)), os.DirFS(d)); err != nil {
			return "", fmt.Errorf("stage examples: %w", err)
		}
	}
	return stage, nil
}
