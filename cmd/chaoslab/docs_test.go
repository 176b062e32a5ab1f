package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/shlex"
)

// docFiles are the guides and pages whose shell blocks give chaoslab
// commands.
func docFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range []string{"../../README.md", "../../docs/*.md", "../../docs/incidents/*.md", "../../examples/README.md", "../../scenarios/README.md"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

var shellBlock = regexp.MustCompile("(?s)```(?:sh|bash|console)\n(.*?)```")

// Every chaoslab command the docs give in a shell block names a command
// and flags chaoslab has, so that the docs cannot drift from the CLI: each
// line is parsed by the command tree as the shell would split it.
func TestDocsCommandsParse(t *testing.T) {
	n := 0
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range shellBlock.FindAllStringSubmatch(string(b), -1) {
			for _, line := range strings.Split(m[1], "\n") {
				args, ok := chaoslabArgs(line)
				if !ok {
					continue
				}
				n++
				if err := parses(args); err != nil {
					t.Errorf("%s: %q: %v", filepath.Base(f), strings.TrimSpace(line), err)
				}
			}
		}
	}
	t.Logf("%d chaoslab commands in the docs parse", n)
	if n < 30 {
		t.Fatalf("only %d chaoslab commands found in the docs' shell blocks", n)
	}
}

// chaoslabArgs is a line's chaoslab arguments (without the program), its
// comment and any pipe dropped; ok is false for other lines.
func chaoslabArgs(line string) ([]string, bool) {
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
	for _, p := range []string{"./bin/chaoslab ", "bin/chaoslab ", "chaoslab "} {
		if strings.HasPrefix(line, p) {
			line = strings.TrimPrefix(line, p)
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			for _, sep := range []string{" | ", " > ", " && ", " || ", " 2>"} {
				if i := strings.Index(line, sep); i >= 0 {
					line = line[:i]
				}
			}
			args, err := shlex.Split(strings.TrimSuffix(strings.TrimSpace(line), "\\"))
			return args, err == nil
		}
	}
	return nil, false
}

// parses finds the command and parses its flags, running nothing.
func parses(args []string) error {
	root := newRoot()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		return &unknownCommand{rest[0]}
	}
	cmd.InitDefaultHelpFlag()
	return cmd.ParseFlags(rest)
}

type unknownCommand struct{ name string }

func (u *unknownCommand) Error() string { return "unknown command " + u.name }
