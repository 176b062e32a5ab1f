package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// lockFile holds an exclusive lock on path (created when missing) until
// its release is called: two processes building the same binary (two
// test packages, a test and `chaoslab images build`) take turns, and the
// second finds the first's binary in the cache. The kernel drops the lock
// when its holder exits, so a killed build leaves nothing held.
func lockFile(ctx context.Context, path string, progress io.Writer, what string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	start, told := time.Now(), false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", what, err)
		}
		if !told && time.Since(start) > time.Second {
			fmt.Fprintf(progress, "%s: waiting for another build of it to finish (lock %s)\n", what, path)
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", what, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return func() { f.Close() }, nil
}
