package docs

import (
	"os"
	"strings"
	"testing"

	"github.com/chaoslab/chaoslab/seeds"
)

// The worked example of writing-a-case-record.md validates, with the one
// note the page shows, and the error the page shows is the one its
// mistake gives.
func TestCaseRecordExample(t *testing.T) {
	page, err := os.ReadFile("writing-a-case-record.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	_, rest, ok := strings.Cut(text, "<!-- example:")
	if !ok {
		t.Fatal("no example marker")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	example, _, _ := strings.Cut(rest, "```")

	const file = "cases/roblox-2021.yaml"
	r, err := seeds.Parse(file, []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	notes := r.Notes()
	if len(notes) != 1 || !strings.Contains(text, "note: "+notes[0]+"\n") {
		t.Errorf("the page does not show the note validate prints: %q", notes)
	}

	bad := strings.Replace(example, "    value: 2\n", "    value: 1-3\n", 1)
	_, err = seeds.Parse(file, []byte(bad))
	if err == nil || !strings.Contains(text, "\n"+err.Error()+"\n") {
		t.Errorf("the page does not show the error validate prints: %v", err)
	}
}
