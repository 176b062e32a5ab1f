package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaoslab/chaoslab/harness/infra/docker"
	"github.com/chaoslab/chaoslab/harness/infra/limits"
)

// killWait is how long Clean waits for a killed process to be gone
// before it removes the groups that held it.
const killWait = 5 * time.Second

// Sweep finishes the run folders under outDir whose controller died: it
// removes what each left (Clean) and writes its report marked aborted.
// Folders with a report, with a live controller, or without a journal
// head are left alone. It returns the folders it finished.
func Sweep(ctx context.Context, outDir string, log *slog.Logger) ([]string, error) {
	entries, err := os.ReadDir(outDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep run folders: %w", err)
	}
	var done []string
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(outDir, e.Name())
		if !e.IsDir() || !Exists(dir) {
			continue
		}
		if last, err := lastRecord(dir); err == nil && last.Kind == KindEnd && (last.By == "" || last.By == BySweep) {
			continue // cheap: a finished run's journal is not read
		}
		ok, err := sweepOne(ctx, dir, log)
		errs = append(errs, err)
		if ok {
			done = append(done, dir)
		}
	}
	return done, errors.Join(errs...)
}

// sweepOne cleans after the run of dir when its controller died, and
// writes its report when none was; ok says it did.
func sweepOne(ctx context.Context, dir string, log *slog.Logger) (ok bool, err error) {
	run, err := Load(dir)
	if err != nil {
		return false, err
	}
	if _, ok := run.Head(); !ok || run.Cleaned() || run.ControllerAlive() {
		return false, nil
	}
	cerr := run.Clean(ctx, log)
	if run.Ended() {
		return true, errors.Join(cerr, run.markEnd(BySweep))
	}
	rep, d, err := run.finish(BySweep)
	if err != nil {
		return false, errors.Join(cerr, err)
	}
	log.Info("sweep: wrote the report of a run whose controller died", "dir", dir, "verdict", rep.Verdict, "cause", d.Cause())
	return true, cerr
}

// lastRecord is the journal's last complete record, read from its tail.
func lastRecord(dir string) (Record, error) {
	f, err := os.Open(filepath.Join(dir, File))
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Record{}, err
	}
	const tail = 4 << 10
	off := max(0, st.Size()-tail)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return Record{}, err
	}
	lines := bytes.Split(bytes.TrimSpace(buf), []byte("\n"))
	var r Record
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil {
		return Record{}, fmt.Errorf("read journal tail: %w", err)
	}
	return r, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Clean removes what the run left, by the journal's own records: each
// program it started that is still the same process (pid, start time and
// boot checked against /proc before any signal) is killed, then each
// variant's groups (chaoslab/<run id>) are removed, and the containers
// and networks whose ids it recorded, with any other container or network
// labelled with a run id it recorded. It refuses while the controller
// lives.
func (r *Run) Clean(ctx context.Context, log *slog.Logger) error {
	if r.ControllerAlive() {
		return fmt.Errorf("clean run %s: its controller is still running", r.Dir)
	}
	var errs []error
	errs = append(errs, r.killProcs(log))
	for _, id := range r.runIDs() {
		if err := limits.SweepRun(id); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, r.removeContainers(ctx, log))
	return errors.Join(errs...)
}

// killProcs kills the run's programs that are still running and waits
// until they are gone.
func (r *Run) killProcs(log *slog.Logger) error {
	var left []Record
	for _, rec := range r.Records {
		if rec.Kind != KindProc || rec.Container != "" || !Same(rec.Pid, rec.Start, rec.Boot) {
			continue
		}
		log.Info("sweep: killing a program a dead run left", "dir", r.Dir, "program", rec.Name, "pid", rec.Pid)
		if err := syscall.Kill(rec.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill %s (pid %d): %w", rec.Name, rec.Pid, err)
		}
		left = append(left, rec)
	}
	deadline := time.Now().Add(killWait)
	for _, rec := range left {
		for Same(rec.Pid, rec.Start, rec.Boot) {
			if time.Now().After(deadline) {
				return fmt.Errorf("kill %s (pid %d): still running after %s", rec.Name, rec.Pid, killWait)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// runIDs are the variants' run ids (what names their groups, containers
// and networks).
func (r *Run) runIDs() []string {
	var out []string
	for _, rec := range r.Records {
		if rec.Kind == KindSite && rec.RunID != "" && !slices.Contains(out, rec.RunID) {
			out = append(out, rec.RunID)
		}
	}
	return out
}

// removeContainers removes the containers and networks the journal names,
// then whatever else carries one of its run ids as its run label. It asks
// the engine only when the run had containers or networks.
func (r *Run) removeContainers(ctx context.Context, log *slog.Logger) error {
	var ctrs, nets, runs []string
	for _, rec := range r.Records {
		switch {
		case rec.Kind == KindProc && rec.Container != "":
			ctrs = append(ctrs, rec.Container)
		case rec.Kind == KindSite && rec.Network != "":
			nets = append(nets, rec.Network)
			if rec.RunID != "" {
				runs = append(runs, rec.RunID)
			}
		}
	}
	if len(ctrs)+len(nets) == 0 {
		return nil
	}
	cli, err := docker.Client(ctx)
	if err != nil {
		return fmt.Errorf("clean run %s: %w", r.Dir, err)
	}
	var errs []error
	for _, id := range ctrs {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !docker.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %.12s: %w", id, err))
		}
	}
	for _, id := range runs {
		sw, err := docker.Sweep(ctx, id)
		if !sw.Empty() {
			log.Info("sweep: removed what a dead run left", "run", id, "removed", sw.String())
		}
		errs = append(errs, err)
	}
	for _, id := range nets {
		errs = append(errs, removeNetwork(ctx, cli, id))
	}
	return errors.Join(errs...)
}

// removeNetwork removes a network by id, retrying for a few seconds while
// the engine still detaches the endpoints of containers just removed.
func removeNetwork(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	deadline := time.Now().Add(killWait)
	for {
		_, err := cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil || docker.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("remove network %.12s: %w", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
