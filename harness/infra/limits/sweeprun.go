package limits

import (
	"errors"
	"fmt"
	"path/filepath"
)

// SweepRun removes the groups of one run (chaoslab/<runID>), as Sweep
// does for every run: only when no live process holds the run's lock, and
// only groups that hold no process (it kills nothing). It returns the
// groups removed none of when some still hold processes (an error
// wrapping ErrLeftoverBusy).
func SweepRun(runID string) error {
	if err := validName(runID); err != nil {
		return fmt.Errorf("limits: sweep run: %w", err)
	}
	l := detectWith(hostEnv())
	if l.mode == ModeNone {
		return nil
	}
	lock, err := lockRun(runID)
	if errors.Is(err, errRunLocked) {
		return fmt.Errorf("limits: sweep run %s: %w", runID, err)
	}
	if err != nil {
		return fmt.Errorf("limits: sweep run %s: cannot lock: %w", runID, err)
	}
	var busy []string
	var errs []error
	for _, b := range l.baseDirs() {
		bs, err := sweepDir(filepath.Join(b, runID))
		busy = append(busy, bs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	unlockRun(lock, len(busy) == 0)
	if len(busy) > 0 {
		errs = append(errs, fmt.Errorf("%w: %v", ErrLeftoverBusy, busy))
	}
	return errors.Join(errs...)
}
