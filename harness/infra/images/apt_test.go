package images

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The host names here are reserved example names (RFC 2606), not mirrors.

func TestParseSourcesList(t *testing.T) {
	text := `# a comment
deb http://mirror.example.org/debian bookworm main contrib   # trailing comment
deb-src http://mirror.example.org/debian bookworm main

deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] https://security.example.net/debian-security bookworm-security main
deb[trusted=yes] file:/srv/repo ./
	deb http://mirror.example.org/debian bookworm-updates main
`
	got, err := ParseSourcesList(text, "sources.list")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("got %d entries, want 5: %+v", len(got), got)
	}
	first := got[0]
	if !reflect.DeepEqual(first.Types, []string{"deb"}) || first.URIs[0] != "http://mirror.example.org/debian" ||
		first.Suites[0] != "bookworm" || !reflect.DeepEqual(first.Components, []string{"main", "contrib"}) ||
		!first.Enabled || first.Line != 2 || first.File != "sources.list" {
		t.Errorf("first entry: %+v", first)
	}
	if got[1].Types[0] != "deb-src" {
		t.Errorf("second entry type %v", got[1].Types)
	}
	sec := got[2]
	if sec.Options["arch"] != "amd64" || sec.Options["signed-by"] != "/usr/share/keyrings/x.gpg" ||
		sec.URIs[0] != "https://security.example.net/debian-security" || sec.Suites[0] != "bookworm-security" {
		t.Errorf("options entry: %+v", sec)
	}
	flat := got[3]
	if flat.Options["trusted"] != "yes" || flat.Suites[0] != "./" || len(flat.Components) != 0 {
		t.Errorf("flat entry: %+v", flat)
	}
	if got[4].Suites[0] != "bookworm-updates" || got[4].Line != 7 {
		t.Errorf("indented entry: %+v", got[4])
	}

	for _, bad := range []string{
		"rpm http://mirror.example.org/x bookworm main",
		"deb [arch=amd64 http://mirror.example.org/debian bookworm main",
		"deb http://mirror.example.org/debian",
		"deb [arch] http://mirror.example.org/debian bookworm main",
	} {
		if _, err := ParseSourcesList(bad, "bad.list"); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !strings.Contains(err.Error(), "bad.list:1") {
			t.Errorf("%q: error %q does not name the line", bad, err)
		}
	}
}

func TestParseDeb822Sources(t *testing.T) {
	text := `# The main archive
Types: deb deb-src
URIs: http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

types: deb
# a comment inside a stanza
uris: http://security.example.net/debian-security
suites: bookworm-security
components: main non-free-firmware
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 abc
 -----END PGP PUBLIC KEY BLOCK-----


Types: deb
URIs: https://vendor.example.com/repo
Suites: nodistro
Components: main
Enabled: no
`
	got, err := ParseDeb822Sources(text, "debian.sources")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d stanzas, want 3: %+v", len(got), got)
	}
	m := got[0]
	if !reflect.DeepEqual(m.Types, []string{"deb", "deb-src"}) || !reflect.DeepEqual(m.Suites, []string{"bookworm", "bookworm-updates"}) ||
		m.Options["signed-by"] != "/usr/share/keyrings/debian-archive-keyring.gpg" || m.Line != 2 || !m.Enabled {
		t.Errorf("first stanza: %+v", m)
	}
	s := got[1]
	if s.URIs[0] != "http://security.example.net/debian-security" || !reflect.DeepEqual(s.Components, []string{"main", "non-free-firmware"}) {
		t.Errorf("second stanza (lower-case fields): %+v", s)
	}
	if !strings.Contains(s.Options["signed-by"], "BEGIN PGP PUBLIC KEY BLOCK") || !strings.Contains(s.Options["signed-by"], "END PGP") {
		t.Errorf("multi-line Signed-By: %q", s.Options["signed-by"])
	}
	if got[2].Enabled {
		t.Errorf("Enabled: no stanza is enabled")
	}

	for _, bad := range []string{
		"Types: deb\nSuites: bookworm\n",                     // no URIs
		" continuation\n",                                    // no field
		"Types deb\nURIs: http://mirror.example.org/x\n",     // no colon
		"URIs: http://mirror.example.org/x\nSuites: sid\n\n", // no Types
	} {
		if _, err := ParseDeb822Sources(bad, "bad.sources"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReadAptSources(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/apt/sources.list", "deb http://one.example.org/debian bookworm main\n")
	write("etc/apt/sources.list.d/b.sources", "Types: deb\nURIs: http://two.example.org/debian-security\nSuites: bookworm-security\nComponents: main\n")
	write("etc/apt/sources.list.d/a.list", "deb http://three.example.org/debian bookworm-updates main\n")
	write("etc/apt/sources.list.d/c.list.disabled", "deb http://four.example.org/debian bookworm main\n")
	write("etc/apt/sources.list.d/d.sources.bak", "Types: deb\nURIs: http://five.example.org/x\nSuites: bookworm\n")
	got, err := ReadAptSources(root)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, s := range got {
		uris = append(uris, s.URIs...)
	}
	want := []string{"http://one.example.org/debian", "http://three.example.org/debian", "http://two.example.org/debian-security"}
	if !reflect.DeepEqual(uris, want) {
		t.Errorf("URIs %v, want %v (sources.list, then sources.list.d/*.list|*.sources sorted)", uris, want)
	}

	// No sources at all is not an error (and gives no mirror).
	empty, err := ReadAptSources(t.TempDir())
	if err != nil || len(empty) != 0 {
		t.Errorf("empty root: %v, %v", empty, err)
	}
	if _, err := DebianMirrors(empty, "bookworm"); err == nil {
		t.Error("DebianMirrors of no sources: no error")
	}
}

func TestDebianMirrors(t *testing.T) {
	deb822, err := ParseDeb822Sources(`Types: deb deb-src
URIs: http://mirror.example.org/debian/
Suites: trixie trixie-updates
Components: main

Types: deb
URIs: http://mirror.example.org/debian-security
Suites: trixie-security
Components: main

Types: deb
URIs: https://vendor.example.com/debian
Suites: bookworm
Components: stable

Types: deb
URIs: http://disabled.example.org/debian
Suites: bookworm
Components: main
Enabled: no
`, "x.sources")
	if err != nil {
		t.Fatal(err)
	}
	oneLine, err := ParseSourcesList(`deb http://old.example.org/debian-security bullseye/updates main
deb http://apt.example.com/pgdg bookworm-pgdg main
deb http://cloud.example.com/apt cloud-sdk-bookworm main
deb-src http://src.example.org/debian bookworm main
deb cdrom:[Debian]/ bookworm main
deb http://mirror.example.org/debian bookworm-backports main
`, "y.list")
	if err != nil {
		t.Fatal(err)
	}
	m, err := DebianMirrors(append(deb822, oneLine...), "bookworm")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"deb http://mirror.example.org/debian bookworm bookworm-updates main",
		"deb http://mirror.example.org/debian-security bookworm-security main",
		"deb http://old.example.org/debian-security bookworm-security main",
	}
	if !reflect.DeepEqual(m.Lines, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(m.Lines, "\n"), strings.Join(want, "\n"))
	}
	if wantHosts := []string{"mirror.example.org", "old.example.org"}; !reflect.DeepEqual(m.Hosts, wantHosts) {
		t.Errorf("hosts %v, want %v", m.Hosts, wantHosts)
	}

	// Only a vendor's repository: no Debian archive.
	if _, err := DebianMirrors(deb822[2:3], "bookworm"); err == nil {
		t.Error("vendor repository only: no error")
	}
}

func TestSplitSuite(t *testing.T) {
	for in, want := range map[string]struct {
		base string
		sec  bool
	}{
		"bookworm":                  {"bookworm", false},
		"bookworm-updates":          {"bookworm", false},
		"bookworm-security":         {"bookworm", true},
		"bullseye/updates":          {"bullseye", true},
		"bookworm-backports":        {"bookworm", false},
		"bookworm-proposed-updates": {"bookworm", false},
		"stable":                    {"stable", false},
	} {
		if b, s := splitSuite(in); b != want.base || s != want.sec {
			t.Errorf("splitSuite(%q) = %q, %v; want %q, %v", in, b, s, want.base, want.sec)
		}
	}
}
