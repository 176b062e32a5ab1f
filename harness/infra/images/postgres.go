package images

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:embed pg-entrypoint.sh
var pgEntrypoint string

// pgPackages are installed into the root file system without recommends.
var pgPackages = []string{"postgresql-" + PostgresMajor}

// pgBinDir is where Debian puts the server's programs.
const pgBinDir = "/usr/lib/postgresql/" + PostgresMajor + "/bin"

// pgMmdebstrapArgs are mmdebstrap's options except the mirrors, the
// staging directory and the output.
func pgMmdebstrapArgs() []string {
	return debianArgs(pgPackages, `--setup-hook=mkdir -p "$1"/usr/share/man/man1 "$1"/usr/share/man/man7`)
}

// pgCleanupHook removes the cluster Debian's postinst creates (the image
// initialises $PGDATA at first start, as the official one does) and, as
// for ZooKeeper, every trace of the mirrors.
const pgCleanupHook = `--customize-hook=rm -rf "$1"/var/lib/postgresql/` + PostgresMajor + `/main "$1"/etc/postgresql/` + PostgresMajor + `/main ` + scrubMirrors

func pgSpec() *spec {
	return &spec{
		Name: "postgresql", Repo: "chaoslab/postgres", Tag: PostgresMajor + "-deb12", Version: PostgresMajor + "-deb12",
		// The official image's defaults.
		Env: [][2]string{
			{"PATH", pgBinDir + ":" + defaultPath},
			{"LANG", "C.UTF-8"},
			{"PG_MAJOR", PostgresMajor},
			{"PGDATA", "/var/lib/postgresql/data"},
		},
		Expose:     []string{"5432"},
		Workdir:    "/",
		Entrypoint: []string{"/usr/local/bin/docker-entrypoint.sh"},
		Cmd:        []string{"postgres"},
		Labels: [][2]string{
			{"org.opencontainers.image.title", "postgres"},
			{"org.opencontainers.image.version", PostgresMajor},
			{"org.opencontainers.image.description", "PostgreSQL " + PostgresMajor + " from Debian " + DebianSuite + "'s postgresql-" + PostgresMajor + " (mmdebstrap)"},
		},
	}
}

func (b *builder) postgresPlan() (*plan, error) {
	s := pgSpec()
	p := &plan{spec: s, hash: s.inputHash(DebianSuite, strings.Join(pgMmdebstrapArgs(), "\n"), pgCleanupHook, pgEntrypoint)}
	p.make = func(ctx context.Context) error { return b.buildPostgres(ctx, s, p.hash) }
	return p, nil
}

// buildPostgres makes the root file system with mmdebstrap from the
// machine's own APT sources and imports it.
func (b *builder) buildPostgres(ctx context.Context, s *spec, hash string) error {
	work, mirrors, err := debianWork(ctx, b, "postgresql")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	stage := filepath.Join(work, "stage")
	if err := os.MkdirAll(filepath.Join(stage, "usr/local/bin"), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	ep := filepath.Join(stage, "usr/local/bin/docker-entrypoint.sh")
	if err := os.WriteFile(ep, []byte(pgEntrypoint), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(ep, 0o755); err != nil {
		return err
	}
	args := append(pgMmdebstrapArgs(), "--customize-hook=sync-in "+stage+" /", pgCleanupHook)
	rootfs, err := b.mmdebstrap(ctx, "postgresql", work, args, pgPackages, mirrors)
	if err != nil {
		return err
	}
	need := []string{strings.TrimPrefix(pgBinDir, "/") + "/postgres", strings.TrimPrefix(pgBinDir, "/") + "/initdb",
		strings.TrimPrefix(pgBinDir, "/") + "/pg_basebackup", "usr/local/bin/docker-entrypoint.sh", "usr/sbin/runuser"}
	debs, err := checkRootfsNeeds(rootfs, mirrors.Hosts, need)
	if err != nil {
		return err
	}
	pkg := "postgresql-" + PostgresMajor
	if debs[pkg] == "" {
		return fmt.Errorf("check root file system: no %s installed", pkg)
	}
	importArgs := []string{"import", "--message", "chaoslab images: " + s.Ref() + " (mmdebstrap " + DebianSuite + ")"}
	changes := append(s.instructions(hash), fmt.Sprintf("LABEL %s=%s", dockerQuote("org.chaoslab.deb."+pkg), dockerQuote(debs[pkg])))
	for _, c := range changes {
		importArgs = append(importArgs, "--change", c)
	}
	importArgs = append(importArgs, rootfs, s.Ref())
	b.progressf("postgresql: docker import %s", s.Ref())
	_, err = command{}.run(ctx, b.log, "docker", importArgs...)
	return err
}
