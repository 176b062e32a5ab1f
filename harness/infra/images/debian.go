package images

import "strings"

// debianArgs are mmdebstrap's options for a Debian image of packages,
// then extra (hooks), except the mirrors, the staging folder and the
// output: no recommends, and no manuals, documentation (but the copyright
// files), translations or info pages.
func debianArgs(packages []string, extra ...string) []string {
	return append([]string{
		"--variant=apt",
		"--include=" + strings.Join(packages, ","),
		`--aptopt=APT::Install-Recommends "false"`,
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-include=/usr/share/doc/*/copyright",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--dpkgopt=path-exclude=/usr/share/info/*",
	}, extra...)
}

// scrubMirrors leaves no mirror in an image: empty sources, no package
// lists and no package cache (apt-get update needs sources added first).
// A hook's command, after the image's own removals.
const scrubMirrors = `"$1"/etc/apt/sources.list.d/* "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* && : >"$1"/etc/apt/sources.list`
