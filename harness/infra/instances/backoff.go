package instances

import (
	"fmt"
	"time"

	"github.com/chaoslab/chaoslab/harness/lab"
)

// MinBackoff is the least first delay of a restart back-off: below it a
// program that dies at once is restarted in a busy loop (Kubernetes
// starts at 10 s; a scaled replay may go much lower, not to nothing).
const MinBackoff = 100 * time.Millisecond

// Backoff is a restart policy like a pod's CrashLoopBackOff: the first
// restart after Initial, each next one after twice the last delay, never
// more than Max; the delays start again from Initial once an incarnation
// has run for ResetAfter (2 x Max: Kubernetes resets after 10 min of
// running with a 5 min cap). Zero is off: nothing is restarted.
type Backoff struct {
	// Initial is the delay before the first restart (e.g. 1s; 0 = off).
	Initial lab.Duration `yaml:"initial" json:"initial"`
	// Max caps the doubling delay (at least Initial).
	Max lab.Duration `yaml:"max" json:"max"`
}

// On reports whether the policy restarts anything.
func (b Backoff) On() bool { return b.Initial > 0 || b.Max > 0 }

// Check says what is wrong with the policy, fields named below prefix
// ("agent_restart").
func (b Backoff) Check(prefix string) []lab.Problem {
	if !b.On() {
		return nil
	}
	var c lab.Checks
	c.Msg(prefix+".initial", lab.CheckDuration(b.Initial, MinBackoff, fmt.Sprintf("the least first delay (%s): below it a program that dies at once is restarted in a busy loop", MinBackoff)))
	c.Need(b.Max >= b.Initial, prefix+".max", "%s is below initial %s: the delay doubles from initial up to max", b.Max, b.Initial)
	c.Msg(prefix+".max", lab.CheckDuration(b.Max, 0, ""))
	return c
}

// Delay is the delay before restart n (0 for the first) of a crash loop.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial.D()
	for range n {
		if d >= b.Max.D() {
			break
		}
		d *= 2
	}
	return min(d, b.Max.D())
}

// ResetAfter is how long an incarnation must run for the delays to start
// again from Initial.
func (b Backoff) ResetAfter() time.Duration { return 2 * b.Max.D() }

// String is the policy as a report states it.
func (b Backoff) String() string {
	if !b.On() {
		return "no restart"
	}
	return fmt.Sprintf("restarted after %s, doubling up to %s (reset after %s up)", b.Initial, b.Max, b.ResetAfter())
}
