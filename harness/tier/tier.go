// Package tier says which tier of the tests a test belongs to (README.md,
// Tests): the test command runs the unit and integration tiers; the
// release tier, CHAOSLAB_FULL=1, is scripts/verify.sh's. It depends on
// nothing of the lab's, so any package's tests can use it.
package tier

import (
	"os"
	"testing"
)

// Full says whether the release tier runs (CHAOSLAB_FULL=1).
func Full() bool { return os.Getenv("CHAOSLAB_FULL") == "1" }

// Release skips a test outside the release tier: one whose ground the
// test command covers otherwise, named by coveredBy (full-size replays,
// the other placement's, component tests a replay exercises).
func Release(t testing.TB, coveredBy string) {
	t.Helper()
	if !Full() {
		t.Skipf("release tier (CHAOSLAB_FULL=1, scripts/verify.sh); in the test command: %s", coveredBy)
	}
}
