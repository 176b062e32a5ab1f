package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// diagnoseSyntax turns a YAML parser's error into the line of the mistake
// and what is wrong in words. The parser names the line where it gave up,
// which for an unclosed quote or bracket can be many lines after the
// mistake (the string runs on to the next quote); the likely mistakes are
// looked for first, each confirmed by parsing the text with it mended.
func diagnoseSyntax(data []byte, err error) (int, string) {
	line := yamlErrLine(err)
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", line)) // the location says it
	lines := strings.Split(string(data), "\n")
	if l := tabIndent(lines); l > 0 {
		return l, "a tab in the indentation: YAML indents with spaces only"
	}
	if l, what := unclosed(lines, line); l > 0 {
		return l, what
	}
	if h := syntaxHints[msg]; h != "" {
		msg += " (" + h + ")"
	}
	return line, msg
}

// syntaxHints say in words what the parser's messages usually mean.
var syntaxHints = map[string]string{
	"mapping values are not allowed in this context":               "a \": \" inside a value that is not quoted: put the value in quotes, or indent the key under its parent",
	"did not find expected key":                                    "a line indented differently from the keys beside it, or text after a quoted value",
	"could not find expected ':'":                                  "a key without \": \", or a line that continues the one above without quotes",
	"found character that cannot start any token":                  "a character such as @, ` or % cannot start a value: put the value in quotes",
	"found unexpected end of stream":                               "a quote or bracket opened and never closed",
	"did not find expected node content":                           "a value is missing, after \"- \", \",\" or \": \"",
	"did not find expected ',' or ']'":                             "a list in [...] that is not closed on its line",
	"did not find expected ',' or '}'":                             "a mapping in {...} that is not closed on its line",
	"block sequence entries are not allowed in this context":       "a \"- \" list item on the line of its key, or indented differently from the items before it",
	"did not find expected '-' indicator":                          "a list item indented differently from the items before it",
	"found a tab character that violates indentation":              "a tab in the indentation: YAML indents with spaces only",
	"found unknown escape character while parsing a quoted scalar": "a backslash in a \"...\" string: write \\\\, or use '...' quotes",
	"did not find URI escaped octet":                               "a % in a tag: put the value in quotes",
	"found undefined tag handle":                                   "a value that starts with !: put it in quotes",
}

// tabIndent is the first line whose indentation holds a tab, 0 when none
// does.
func tabIndent(lines []string) int {
	for i, l := range lines {
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if strings.Contains(indent, "\t") && strings.TrimSpace(l) != "" {
			return i + 1
		}
	}
	return 0
}

// unclosed finds a line that opens a quoted string, a [ list or a {
// mapping and does not close it, where closing it there mends the parse
// (it then parses, or fails later than before). 0 when there is none. The
// parser may name a line after the mistake or, for a quote that runs on
// into the keys below, the line of the mapping before it: every line is
// a candidate.
func unclosed(lines []string, errLine int) (int, string) {
	tries := 0
	for i, l := range lines {
		at, closer, what := openAt(l)
		if closer == "" {
			continue
		}
		if tries++; tries > maxMends {
			break
		}
		mended := append(append([]string(nil), lines[:i]...), l[:at]+closer+l[at:])
		mended = append(mended, lines[i+1:]...)
		if mends(strings.Join(mended, "\n"), errLine) {
			return i + 1, what
		}
	}
	return 0, ""
}

// maxMends bounds the lines tried, each a parse of the whole text.
const maxMends = 20

// openAt says what a line leaves open at its end: where the text that
// closes it goes (before a comment), that text, and the problem in words
// ("" when nothing is open).
func openAt(l string) (int, string, string) {
	var stack []byte
	for i := 0; i < len(l); i++ {
		ch := l[i]
		switch {
		case ch == '#' && (i == 0 || l[i-1] == ' '):
			closer, what := closers(stack)
			return i, closer, what
		case (ch == '"' || ch == '\'') && startsValue(l, i):
			end := closeQuote(l, i)
			if end < 0 {
				return len(l), string(ch), fmt.Sprintf("a string opened with %c is not closed on this line (YAML reads on to the next %c)", ch, ch)
			}
			i = end
		case ch == '[' || ch == '{':
			if len(stack) > 0 || startsValue(l, i) {
				stack = append(stack, ch)
			}
		case (ch == ']' || ch == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	closer, what := closers(stack)
	return len(l), closer, what
}

func closers(stack []byte) (string, string) {
	if len(stack) == 0 {
		return "", ""
	}
	var b strings.Builder
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '[' {
			b.WriteByte(']')
		} else {
			b.WriteByte('}')
		}
	}
	if stack[0] == '[' {
		return b.String(), "a list opened with [ is not closed on this line"
	}
	return b.String(), "a mapping opened with { is not closed on this line"
}

// startsValue says whether position i of a line begins a value: after the
// indentation, "- ", ": ", or inside a flow collection after [ { or ,.
func startsValue(l string, i int) bool {
	before := strings.TrimRight(l[:i], " ")
	return before == "" || strings.HasSuffix(before, ":") || strings.HasSuffix(before, "-") ||
		strings.HasSuffix(before, "[") || strings.HasSuffix(before, "{") || strings.HasSuffix(before, ",")
}

// closeQuote is the index of the quote that closes the one at i, -1 when
// the line has none.
func closeQuote(l string, i int) int {
	q := l[i]
	for j := i + 1; j < len(l); j++ {
		switch {
		case q == '"' && l[j] == '\\':
			j++
		case q == '\'' && l[j] == '\'' && j+1 < len(l) && l[j+1] == '\'':
			j++
		case l[j] == q:
			return j
		}
	}
	return -1
}

// mends says whether text parses, or fails later than errLine (the
// line after, for the parser names the line before some mistakes).
func mends(text string, errLine int) bool {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			l := yamlErrLine(err)
			return errLine > 0 && l > errLine+1
		}
	}
}
