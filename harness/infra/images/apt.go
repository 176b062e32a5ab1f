package images

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// AptSource is one entry of the machine's APT sources: one line of a
// one-line-style file (sources.list, *.list) or one stanza of a deb822 file
// (*.sources).
type AptSource struct {
	Types      []string          // "deb", "deb-src"
	URIs       []string          // archive roots
	Suites     []string          // e.g. bookworm bookworm-updates
	Components []string          // e.g. main contrib
	Options    map[string]string // lower-case keys: signed-by, arch, trusted, ...
	Enabled    bool              // false for deb822 "Enabled: no"
	File       string            // where it was read from (for messages)
	Line       int               // line (one-line) or first line of the stanza (deb822)
}

// ParseSourcesList parses the one-line format of sources.list(5):
//
//	deb [ option=value ... ] uri suite [component ...]
//
// Comments (#) and blank lines are skipped. file names the source in errors.
func ParseSourcesList(text, file string) ([]AptSource, error) {
	var out []AptSource
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		src := AptSource{File: file, Line: n, Enabled: true, Options: map[string]string{}}
		// The type is the first word; options may follow it with or without
		// a space ("deb [arch=amd64] ..." or "deb[arch=amd64] ...").
		typ := line
		if i := strings.IndexAny(line, " \t["); i >= 0 {
			typ = line[:i]
		}
		rest := strings.TrimSpace(line[len(typ):])
		if typ != "deb" && typ != "deb-src" {
			return nil, fmt.Errorf("%s:%d: unknown type %q (want deb or deb-src)", file, n, typ)
		}
		src.Types = []string{typ}
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated option list", file, n)
			}
			for _, opt := range strings.Fields(rest[1:end]) {
				k, v, ok := strings.Cut(opt, "=")
				if !ok {
					return nil, fmt.Errorf("%s:%d: option %q is not key=value", file, n, opt)
				}
				k = strings.TrimRight(k, "+-") // arch+=, arch-=
				src.Options[strings.ToLower(k)] = v
			}
			rest = strings.TrimSpace(rest[end+1:])
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: want a URI and a suite", file, n)
		}
		src.URIs = []string{f[0]}
		src.Suites = []string{f[1]}
		src.Components = f[2:]
		out = append(out, src)
	}
	return out, sc.Err()
}

// ParseDeb822Sources parses the deb822 format of sources.list(5): stanzas
// of "Field: value" lines separated by blank lines; a line starting with a
// space or tab continues the previous field; lines starting with # are
// comments. Field names are case-insensitive.
func ParseDeb822Sources(text, file string) ([]AptSource, error) {
	var out []AptSource
	fields := map[string]string{}
	var last string
	start := 0
	flush := func() error {
		if len(fields) == 0 {
			return nil
		}
		src := AptSource{File: file, Line: start, Enabled: true, Options: map[string]string{}}
		for k, v := range fields {
			switch k {
			case "types":
				src.Types = strings.Fields(v)
			case "uris":
				src.URIs = strings.Fields(v)
			case "suites":
				src.Suites = strings.Fields(v)
			case "components":
				src.Components = strings.Fields(v)
			case "enabled":
				src.Enabled = !strings.EqualFold(strings.TrimSpace(v), "no")
			default:
				src.Options[k] = strings.TrimSpace(v)
			}
		}
		fields = map[string]string{}
		last = ""
		if len(src.Types) == 0 || len(src.URIs) == 0 || len(src.Suites) == 0 {
			return fmt.Errorf("%s:%d: a stanza needs Types, URIs and Suites", file, src.Line)
		}
		out = append(out, src)
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			continue
		case strings.TrimSpace(line) == "":
			if err := flush(); err != nil {
				return nil, err
			}
		case line[0] == ' ' || line[0] == '\t':
			if last == "" {
				return nil, fmt.Errorf("%s:%d: continuation line without a field", file, n)
			}
			fields[last] += "\n" + strings.TrimSpace(line)
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				return nil, fmt.Errorf("%s:%d: want \"Field: value\"", file, n)
			}
			if len(fields) == 0 {
				start = n
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadAptSources reads the APT sources of the system rooted at root ("" or
// "/" for this machine): etc/apt/sources.list, etc/apt/sources.list.d/*.list
// and etc/apt/sources.list.d/*.sources, as apt does (other names, such as
// *.disabled, are ignored). Missing files are not an error.
func ReadAptSources(root string) ([]AptSource, error) {
	if root == "" {
		root = "/"
	}
	files := []string{filepath.Join(root, "etc/apt/sources.list")}
	dir := filepath.Join(root, "etc/apt/sources.list.d")
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var more []string
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if n := e.Name(); strings.HasSuffix(n, ".list") || strings.HasSuffix(n, ".sources") {
			more = append(more, filepath.Join(dir, n))
		}
	}
	sort.Strings(more)
	files = append(files, more...)
	var out []AptSource
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var srcs []AptSource
		if strings.HasSuffix(f, ".sources") {
			srcs, err = ParseDeb822Sources(string(b), f)
		} else {
			srcs, err = ParseSourcesList(string(b), f)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, srcs...)
	}
	return out, nil
}

// debianReleases are the suite names of the Debian archive, by code name and
// by alias. A source whose suite (without -updates, -security, ...) is not one
// of these is not a Debian archive (a vendor's repository) and is not used.
var debianReleases = []string{
	"buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
	"oldoldstable", "oldstable", "stable", "testing", "unstable",
}

// Mirrors are the Debian archives the machine's APT uses, as mmdebstrap
// mirror arguments for one suite.
type Mirrors struct {
	Lines []string // "deb URI suite suite-updates main", "deb URI suite-security main"
	Hosts []string // host names of those URIs (to check none is left in an image)
}

// DebianMirrors picks the Debian archives out of the machine's sources and
// points them at suite (e.g. bookworm): every URI that serves a Debian
// release's main component becomes "deb URI suite suite-updates main" and
// every URI that serves a -security suite (or the old "release/updates"
// form) becomes "deb URI suite-security main". Disabled entries, deb-src
// entries and other vendors' repositories are left out. It works on a
// machine of another Debian release too, since only the URIs are kept.
func DebianMirrors(srcs []AptSource, suite string) (Mirrors, error) {
	var main, security []string
	add := func(list *[]string, u string) {
		u = strings.TrimRight(u, "/")
		if !slices.Contains(*list, u) {
			*list = append(*list, u)
		}
	}
	for _, s := range srcs {
		if !s.Enabled || !slices.Contains(s.Types, "deb") || !slices.Contains(s.Components, "main") {
			continue
		}
		for _, st := range s.Suites {
			base, isSecurity := splitSuite(st)
			if !slices.Contains(debianReleases, base) {
				continue
			}
			for _, u := range s.URIs {
				if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "file:") {
					continue // cdrom:, mirror+file:, tor+http: ... are not for a build
				}
				if isSecurity {
					add(&security, u)
				} else {
					add(&main, u)
				}
			}
		}
	}
	if len(main) == 0 {
		return Mirrors{}, errors.New("no Debian archive (a deb entry with a Debian suite and the main component) in the machine's APT sources")
	}
	var m Mirrors
	for _, u := range main {
		m.Lines = append(m.Lines, fmt.Sprintf("deb %s %s %s-updates main", u, suite, suite))
	}
	for _, u := range security {
		m.Lines = append(m.Lines, fmt.Sprintf("deb %s %s-security main", u, suite))
	}
	for _, u := range append(slices.Clone(main), security...) {
		if pu, err := url.Parse(u); err == nil && pu.Hostname() != "" && !slices.Contains(m.Hosts, pu.Hostname()) {
			m.Hosts = append(m.Hosts, pu.Hostname())
		}
	}
	return m, nil
}

// splitSuite splits "bookworm-updates" into "bookworm", false and
// "bookworm-security" or "bullseye/updates" into "bookworm"/"bullseye", true.
func splitSuite(s string) (base string, security bool) {
	s = strings.TrimSuffix(s, "/")
	if b, ok := strings.CutSuffix(s, "/updates"); ok {
		return b, true
	}
	if b, ok := strings.CutSuffix(s, "-security"); ok {
		return b, true
	}
	for _, suf := range []string{"-proposed-updates", "-updates", "-backports-sloppy", "-backports"} {
		if b, ok := strings.CutSuffix(s, suf); ok {
			return b, false
		}
	}
	return s, false
}
