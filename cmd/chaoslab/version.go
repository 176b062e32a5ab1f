package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// clientModules are the client libraries whose versions `chaoslab version`
// reports, by module path, under a short name.
var clientModules = []struct{ name, path string }{
	{"go-zookeeper/zk", "github.com/go-zookeeper/zk"},
	{"etcd client", "go.etcd.io/etcd/client/v3"},
	{"consul api", "github.com/hashicorp/consul/api"},
	{"testcontainers-go", "github.com/testcontainers/testcontainers-go"},
}

// versionInfo is what the binary knows of its build.
type versionInfo struct {
	Version   string            `json:"version"`
	Commit    string            `json:"commit,omitempty"`
	CommitAt  string            `json:"commit_time,omitempty"`
	Modified  bool              `json:"modified,omitempty"`
	GoVersion string            `json:"go"`
	Libraries map[string]string `json:"libraries"`
}

func buildInfo() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return versionInfo{Version: "unknown", GoVersion: "unknown", Libraries: map[string]string{}}
	}
	return versionOf(bi)
}

// versionOf reads the version, the VCS settings (go build -buildvcs) and
// the client libraries from a build's information.
func versionOf(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Version: bi.Main.Version, GoVersion: bi.GoVersion, Libraries: map[string]string{}}
	if v.Version == "" || v.Version == "(devel)" {
		v.Version = "dev"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitAt = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		for _, m := range clientModules {
			if d.Path == m.path {
				v.Libraries[m.name] = d.Version
			}
		}
	}
	return v
}

// versionText is the version as --version prints it.
func versionText(v versionInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaoslab %s\n", v.Version)
	commit := "unknown (built without VCS information)"
	if v.Commit != "" {
		commit = v.Commit
		if v.CommitAt != "" {
			commit += " (" + v.CommitAt + ")"
		}
		if v.Modified {
			commit += ", modified"
		}
	}
	fmt.Fprintf(&b, "%-18s %s\n", "commit", commit)
	fmt.Fprintf(&b, "%-18s %s\n", "go", v.GoVersion)
	for _, m := range clientModules {
		lib := v.Libraries[m.name]
		if lib == "" {
			lib = "not linked"
		}
		fmt.Fprintf(&b, "%-18s %s\n", m.name, lib)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func versionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print chaoslab's version, commit, Go version and client libraries",
		Long: `Print chaoslab's version, the commit it was built from (with -buildvcs, as
scripts/setup.sh builds it), the Go version and the versions of the client
libraries it links: go-zookeeper/zk, the etcd client, the Consul API and
testcontainers-go. The same as chaoslab --version.

Exit status: 0; 2 for a bad flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			j, err := asJSON(format)
			if err != nil {
				return err
			}
			v := buildInfo()
			if j {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), versionText(v))
			return err
		},
	}
	outputFlag(cmd, &format)
	return cmd
}
