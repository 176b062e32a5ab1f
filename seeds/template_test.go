package seeds_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/seeds"
)

// The template parses as it is; Validate then asks only for what is left
// blank; filled in, it validates with nothing to note.
func TestTemplateParsesAndValidatesFilledIn(t *testing.T) {
	text, err := seeds.Template("ACME-2024-03")
	require.NoError(t, err)
	r, err := seeds.Parse("acme.yaml", text)
	require.NoError(t, err)
	require.Equal(t, "ACME-2024-03", r.ID)
	err = r.Validate()
	require.Error(t, err, "placeholders left")
	for _, p := range seeds.ProblemsOf(err) {
		require.True(t, strings.HasPrefix(p.Msg, "required"), "only blanks are asked for: %s", p)
		require.Positive(t, p.Line, p.Error())
	}
	require.Len(t, seeds.ProblemsOf(err), 13, err.Error())

	filled := strings.NewReplacer(
		`organisation: ""`, `organisation: Acme`,
		`date: ""`, `date: "2024-03-01"`,
		`title: ""`, `title: A stalled leader took the readers down`,
		`systems: [""]`, `systems: [zookeeper]`,
		`lab_system: ""`, `lab_system: zookeeper`,
		`trigger: ""`, `trigger: The leader stalled.`,
		`    event: ""`, `    event: The leader stalls.`,
		`  - name: ""`, `  - name: stall_duration`,
		`    value: 0`, `    value: 15`,
		`    unit: ""`, `    unit: minutes`,
		`    text: ""`, `    text: How long the leader stalled.`,
		`  - ""`, `  - The leader stopped answering.`,
		`  - url: ""`, `  - url: https://example.com/postmortem`+"\n"+`    archived: https://web.archive.org/web/2024/https://example.com/postmortem`,
		`summary: ""`, `summary: A stalled leader took the readers down.`,
	).Replace(string(text))
	r, err = seeds.Parse("acme.yaml", []byte(filled))
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	require.Empty(t, r.Notes())

	// Its training block, uncommented, validates too.
	at := strings.Index(filled, "# training:")
	require.Positive(t, at)
	train := filled[:at] + regexp.MustCompile(`(?m)^# `).ReplaceAllString(filled[at:], "")
	require.Contains(t, train, "\ntraining:\n  cause:")
	r, err = seeds.Parse("acme.yaml", []byte(train))
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	require.NotNil(t, r.Training)
	require.Len(t, r.Training.Responders, 1)

	for _, bad := range []string{"", "has space", "-lead", "a/b", "x:y"} {
		_, err := seeds.Template(bad)
		require.Error(t, err, bad)
	}
}

// Every key the template has, written or in a comment, is in the
// reference.
func TestReferenceNamesTheTemplatesFields(t *testing.T) {
	ref, err := os.ReadFile("reference.md")
	require.NoError(t, err)
	text, err := seeds.Template("ACME-1")
	require.NoError(t, err)

	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(text, &doc))
	paths := keyPaths(doc.Content[0], "")
	require.Contains(t, paths, "numbers[].approx")
	require.Contains(t, paths, "sources[].kind")
	for _, p := range paths {
		require.NotEmpty(t, rowOf(string(ref), p), "the template's %s is not in reference.md", p)
	}

	// A commented key names a key of the reference (at any depth).
	commented := regexp.MustCompile(`(?m)^\s*#\s+(?:- )?([a-z_]+):(?:\s|$)`).FindAllStringSubmatch(string(text), -1)
	require.NotEmpty(t, commented)
	seen := map[string]bool{}
	for _, m := range commented {
		seen[m[1]] = true
		require.Regexp(t, "(?m)^\\| `([a-z_.\\[\\]]+\\.)?"+regexp.QuoteMeta(m[1])+"` \\|", string(ref), "the template's commented %s", m[1])
	}
	for _, k := range []string{"archived", "training", "actions", "until", "decoys", "held", "responders"} {
		require.True(t, seen[k], "the template tells of %s", k)
	}
}

// keyPaths are the key paths a document holds, as the reference writes
// them (numbers[].value).
func keyPaths(n *yaml.Node, prefix string) []string {
	var out []string
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if prefix != "" {
				p = prefix + "." + p
			}
			out = append(out, p)
			out = append(out, keyPaths(n.Content[i+1], p)...)
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			out = append(out, keyPaths(item, prefix+"[]")...)
		}
	}
	return out
}
