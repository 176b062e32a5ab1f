package scenarios_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/scenarios"
)

// An unclosed quote, [ or a tab anywhere in a built-in scenario is
// reported at its own line, however far on the parser gives up.
func TestSyntaxMistakesAtTheirLine(t *testing.T) {
	plain := regexp.MustCompile(`^(\s*(?:- )?[a-z_]+: )([A-Za-z0-9/].*)$`)
	for _, name := range []string{"il-0587-zk-treecache-reconnect-storm.yaml", "il-0384-kinesis-thread-per-peer.yaml"} {
		src, err := scenarios.ReadBuiltin(name)
		require.NoError(t, err)
		lines := strings.Split(string(src), "\n")
		tried := 0
		for i, l := range lines {
			m := plain.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			for _, mistake := range []struct{ line, msg string }{
				{m[1] + `"` + m[2], `a string opened with " is not closed on this line`},
				{m[1] + `[` + m[2], `a list opened with [ is not closed on this line`},
				{"\t" + l, "a tab in the indentation"},
			} {
				bad := append(append(append([]string(nil), lines[:i]...), mistake.line), lines[i+1:]...)
				_, err := scenarios.Parse(name, []byte(strings.Join(bad, "\n")))
				if err == nil {
					continue // still valid YAML (a tab after a block scalar's indentation)
				}
				es := fieldErrors(t, err)
				if !strings.HasPrefix(es[0].Msg, "parse YAML") {
					continue // valid YAML, refused for its meaning
				}
				tried++
				require.Equal(t, i+1, es[0].Line, "%s line %d: %q: %v", name, i+1, mistake.line, err)
				require.Contains(t, es[0].Msg, mistake.msg, "%s line %d", name, i+1)
			}
		}
		require.Greater(t, tried, 50, name)
	}
}
