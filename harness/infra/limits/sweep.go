package limits

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLeftoverBusy is returned (wrapped) by Sweep when leftover groups still
// hold processes; Sweep never kills them.
var ErrLeftoverBusy = errors.New("limits: leftover cgroups still hold processes")

var errRunLocked = errors.New("run lock held by another process")

// lockDirs are where run locks live, in order of preference.
func lockDirs() []string {
	return []string{"/run/chaoslab-limits", filepath.Join(os.TempDir(), "chaoslab-limits")}
}

// lockRun takes the run's flock, non-blocking. It returns errRunLocked when
// a live process holds it. The kernel drops the lock when its holder dies.
func lockRun(runID string) (*os.File, error) {
	var lastErr error
	for _, d := range lockDirs() {
		if err := os.MkdirAll(d, 0o700); err != nil {
			lastErr = err
			continue
		}
		f, err := os.OpenFile(filepath.Join(d, runID+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			lastErr = err
			continue
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errRunLocked
			}
			lastErr = err
			continue
		}
		_ = f.Truncate(0)
		_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
		return f, nil
	}
	return nil, lastErr
}

// unlockRun releases (and, with remove, deletes) a run lock.
func unlockRun(f *os.File, remove bool) {
	if remove {
		_ = os.Remove(f.Name())
	}
	_ = f.Close()
}

// Sweep removes leftover chaoslab/<runID> groups of earlier interrupted runs.
// A run whose Manager is still open (its lock is held) is skipped. Sweep
// never kills anything: it removes only empty groups, and reports groups that
// still hold processes in the log and in an error wrapping ErrLeftoverBusy.
// Where cgroups are not usable it does nothing. logger may be nil.
func Sweep(logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "limits")
	l := detectWith(hostEnv())
	if l.mode == ModeNone {
		logger.Debug("limits: sweep skipped", "reason", l.reason)
		return nil
	}
	bases := l.baseDirs()
	var runs []string
	for _, b := range bases {
		entries, err := os.ReadDir(b)
		if err != nil {
			continue // no chaoslab directory: nothing left over
		}
		for _, e := range entries {
			if e.IsDir() && validName(e.Name()) == nil && !slices.Contains(runs, e.Name()) {
				runs = append(runs, e.Name())
			}
		}
	}
	var busy []string
	var errs []error
	for _, run := range runs {
		lock, err := lockRun(run)
		if errors.Is(err, errRunLocked) {
			logger.Debug("limits: sweep: run in progress, skipped", "run", run)
			continue
		}
		if err != nil {
			// Without a lock we cannot tell a live run from a dead one.
			errs = append(errs, fmt.Errorf("limits: sweep: cannot lock run %q: %w", run, err))
			continue
		}
		var runBusy []string
		for _, b := range bases {
			bs, err := sweepDir(filepath.Join(b, run))
			runBusy = append(runBusy, bs...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		if len(runBusy) == 0 {
			logger.Info("limits: sweep: removed leftover run groups", "run", run)
		} else {
			logger.Warn("limits: sweep: leftover groups still hold processes; not killed, not removed", "run", run, "groups", runBusy)
		}
		busy = append(busy, runBusy...)
		unlockRun(lock, len(runBusy) == 0)
	}
	for _, b := range bases {
		_ = unix.Rmdir(b) // fails while other runs exist: fine
	}
	sweepLocks(bases)
	if len(busy) > 0 {
		errs = append(errs, fmt.Errorf("%w: %s", ErrLeftoverBusy, strings.Join(busy, "; ")))
	}
	return errors.Join(errs...)
}

// sweepDir removes dir and its child groups, bottom up, where they hold no
// process, and lists the ones that do.
func sweepDir(dir string) (busy []string, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	childBusy := false
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := sweepDir(filepath.Join(dir, e.Name()))
		if len(b) > 0 || err != nil {
			childBusy = true
		}
		busy = append(busy, b...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	s, err := readString(dir, "cgroup.procs")
	if err != nil {
		return busy, errors.Join(append(errs, err)...)
	}
	pids, err := parsePids(s)
	if err != nil {
		return busy, errors.Join(append(errs, err)...)
	}
	if len(pids) > 0 {
		return append(busy, fmt.Sprintf("%s (pids %v)", dir, pids)), errors.Join(errs...)
	}
	if childBusy {
		return busy, errors.Join(errs...)
	}
	if err := rmdirRetry(dir); err != nil {
		errs = append(errs, fmt.Errorf("limits: sweep: removing %s: %w", dir, err))
	}
	return busy, errors.Join(errs...)
}

// rmdirRetry removes an empty cgroup directory, retrying briefly on EBUSY
// (tasks that just exited can hold it for a moment).
func rmdirRetry(dir string) error {
	delay := 10 * time.Millisecond
	var err error
	for range 5 {
		err = unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		time.Sleep(delay)
		delay *= 2
	}
	return err
}

// sweepLocks removes lock files of dead runs that have no group left.
func sweepLocks(bases []string) {
	for _, d := range lockDirs() {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			run, ok := strings.CutSuffix(e.Name(), ".lock")
			if !ok || validName(run) != nil {
				continue
			}
			left := false
			for _, b := range bases {
				if _, err := os.Stat(filepath.Join(b, run)); err == nil {
					left = true
				}
			}
			if left {
				continue
			}
			if lock, err := lockRun(run); err == nil {
				unlockRun(lock, true)
			}
		}
	}
}
