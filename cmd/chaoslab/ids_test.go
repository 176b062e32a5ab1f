package main

import (
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/scenarios"
	"github.com/chaoslab/chaoslab/sim/cases"
)

// listedIDs are the first column of both tables `chaoslab list` prints: the
// scenarios' ids and the case ids.
func listedIDs(t *testing.T) []string {
	t.Helper()
	out, _, code := chaoslab(t, "list")
	require.Equal(t, 0, code)
	var ids []string
	header := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			header = false
		case f[0] == "SCENARIO" || f[0] == "CASE":
			header = true
		case header:
			ids = append(ids, f[0])
		}
	}
	require.Contains(t, ids, "IL-0587")
	require.Contains(t, ids, "AWS-EBS-2011")
	return ids
}

// idCase is a command line and what it should end with.
type idCase struct {
	args []string
	code int
	want string // in stderr
}

// Every command that takes an id takes it in the form `list` prints it, and
// with its letters' case swapped, and completion offers it for what the user
// typed, spelled as typed (shells keep only words that start with exactly
// that). Commands that would start servers or models are stopped right after
// the id is resolved by a flag they refuse (--variant, --scale).
func TestIDsAsListed(t *testing.T) {
	for _, listed := range listedIDs(t) {
		s, scenErr := scenarios.Find(listed)
		model, modelErr := cases.Get(listed)
		// As listed, and with every letter's case swapped (IL-0587 and
		// il-0587; il-0587-zk-... and IL-0587-ZK-...).
		for _, id := range []string{listed, swapCase(listed)} {
			t.Run(id, func(t *testing.T) {
				cmds := []idCase{{args: []string{"show", id}}, {args: []string{"validate", id}}}
				switch {
				case scenErr == nil:
					cmds = append(cmds, idCase{[]string{"run", id, "--variant", "no-such-variant"}, 2, s.ID + ` has no variant "no-such-variant"`})
					if id == listed { // bench resolves as run does
						cmds = append(cmds, idCase{[]string{"bench", id, "--variant", "no-such-variant"}, 2, s.ID + ` has no variant "no-such-variant"`})
					}
				default:
					cmds = append(cmds, idCase{[]string{"run", id}, 2, "has no harness scenario"})
				}
				if modelErr == nil {
					cmds = append(cmds, idCase{[]string{"sim", id, "--scale", "galactic"}, 2, "model " + model.ID + `: scale "galactic"`})
				}
				for _, c := range cmds {
					_, stderr, code := chaoslab(t, c.args...)
					require.Equal(t, c.code, code, "chaoslab %s: %s", strings.Join(c.args, " "), stderr)
					require.Contains(t, stderr, c.want, "chaoslab %s", strings.Join(c.args, " "))
				}
				if id == listed {
					return
				}
				// Completion of the first characters, typed in the other case.
				prefix := id[:4]
				want := prefix + listed[4:]
				for _, c := range []struct {
					cmd    string
					offers bool
				}{
					{"show", true},
					{"run", scenErr == nil},
					{"sim", modelErr == nil && (strings.EqualFold(listed, model.Ref()) || strings.EqualFold(listed, model.Scenario))},
				} {
					out, _, code := chaoslab(t, "__complete", c.cmd, prefix)
					require.Equal(t, 0, code)
					var words []string
					for _, w := range strings.Split(strings.TrimSpace(out), "\n") {
						if !strings.HasPrefix(w, ":") {
							require.True(t, strings.HasPrefix(w, prefix), "%s offers %q for %q", c.cmd, w, prefix)
							words = append(words, w)
						}
					}
					if c.offers {
						require.Contains(t, words, want, "chaoslab %s %s<TAB>", c.cmd, prefix)
					}
				}
			})
		}
	}
}

// swapCase swaps the case of every letter.
func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		if u := unicode.ToUpper(r); u != r {
			return u
		}
		return unicode.ToLower(r)
	}, s)
}
