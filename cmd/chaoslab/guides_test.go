package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runnableGuides are guides whose every chaoslab command a test runs, in
// order, in a copy of the folder they work in (the finished files): a
// command that writes a template (new ... -o FILE) writes it, commands
// that expect it to fail see it, and the finished file stands for the
// reader's edit from the next command expected to pass.
var runnableGuides = []struct{ doc, dir string }{
	{"../../docs/your-own-incident.md", "../../examples/own-incident"},
}

// longCommands need real servers for minutes; the guide gives what they
// measured.
var longCommands = map[string]bool{"run": true, "gameday": true, "train": true}

// TestGuidesRun runs each guide's chaoslab commands and checks each exit
// status: 0, or the one its comment names ("# exit 2: ...").
func TestGuidesRun(t *testing.T) {
	for _, g := range runnableGuides {
		t.Run(filepath.Base(g.doc), func(t *testing.T) {
			src, err := filepath.Abs(g.dir)
			require.NoError(t, err)
			text, err := os.ReadFile(g.doc)
			require.NoError(t, err)
			work := t.TempDir()
			require.NoError(t, os.CopyFS(work, os.DirFS(src)))
			t.Chdir(work)
			t.Cleanup(func() { userCases = "" })
			n, edits := 0, []func(){}
			for _, m := range shellBlock.FindAllStringSubmatch(string(text), -1) {
				for _, line := range strings.Split(m[1], "\n") {
					args, ok := chaoslabArgs(line)
					if !ok || longCommands[args[0]] {
						continue
					}
					n++
					edits = runGuideLine(t, line, args, edits)
				}
			}
			require.GreaterOrEqual(t, n, 8, "chaoslab commands run")
		})
	}
}

// runGuideLine runs one command of a guide and checks its exit status;
// edits are the reader's edits not made yet (the finished files to put
// back), made before a command expected to pass.
func runGuideLine(t *testing.T, line string, args []string, edits []func()) []func() {
	t.Helper()
	want := 0
	if _, c, ok := strings.Cut(line, "# exit "); ok {
		want, _ = strconv.Atoi(strings.TrimRight(strings.Fields(c)[0], ":"))
	}
	if want == 0 {
		for _, edit := range edits {
			edit()
		}
		edits = nil
	}
	if restore := stashOutput(t, args); restore != nil {
		edits = append(edits, restore)
	}
	userCases = ""
	got := exitCode(execute(context.Background(), newRoot(), args))
	require.Equal(t, want, got, "exit status of %q", strings.TrimSpace(line))
	return edits
}

// stashOutput moves aside the finished file a `new` command would write
// (-o FILE), and returns what puts it back once the command has written
// its template there.
func stashOutput(t *testing.T, args []string) func() {
	if args[0] != "new" {
		return nil
	}
	var out string
	for i, a := range args {
		if (a == "-o" || a == "--output") && i+1 < len(args) {
			out = args[i+1]
		}
	}
	if _, err := os.Stat(out); out == "" || err != nil {
		return nil
	}
	require.NoError(t, os.Rename(out, out+".finished"))
	return func() {
		_, err := os.Stat(out)
		require.NoError(t, err, "%s: the template was not written", out)
		require.NoError(t, os.Rename(out+".finished", out))
	}
}
