package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	hrefRE   = regexp.MustCompile(`href="([^"]+)"`)
	mdLinkRE = regexp.MustCompile(`\]\(([^)\s]+)\)|<([^>\s]+)>`)
)

// localLinks are the links of a page that point into the run folder (not
// to the web, not to an anchor of the page).
func localLinks(links []string) []string {
	var out []string
	for _, l := range links {
		if l == "" || strings.HasPrefix(l, "#") || strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// runFolder writes the files a run leaves beside its report: every
// variant's logs, one per client and server.
func runFolder(t *testing.T, r *Report) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range r.Variants {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, v.LogDir), 0o755))
		for _, c := range v.Clients {
			require.NoError(t, os.WriteFile(filepath.Join(dir, v.LogDir, c.ID+".log"), []byte("log\n"), 0o644))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, v.LogDir, "zk1.log"), []byte("log\n"), 0o644))
	}
	return dir
}

func requireLinksResolve(t *testing.T, dir string) {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	var html []string
	for _, m := range hrefRE.FindAllStringSubmatch(string(page), -1) {
		html = append(html, m[1])
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	var mds []string
	for _, m := range mdLinkRE.FindAllStringSubmatch(string(md), -1) {
		mds = append(mds, m[1]+m[2])
	}
	for name, links := range map[string][]string{"index.html": html, "report.md": mds} {
		local := localLinks(links)
		require.NotEmpty(t, local, "%s links to nothing in the run folder", name)
		for _, l := range local {
			_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(l)))
			require.NoError(t, err, "%s links to %s, which is not in the run folder", name, l)
		}
	}
}

// Every link of index.html and report.md into the run folder resolves to
// a file or folder there.
func TestLinksResolve(t *testing.T) {
	r := testReport(t)
	dir := runFolder(t, r)
	require.NoError(t, Write(r, dir))
	requireLinksResolve(t, dir)
}

// A client log recorded relative to its variant's folder (logs/client-01.log
// where the file is <variant>/logs/client-01.log) is linked where the file
// is.
func TestLinksResolveVariantRelativeLogs(t *testing.T) {
	r := testReport(t)
	for _, v := range r.Variants {
		v.LogDir = v.Name + "/logs"
		for i := range v.Clients {
			v.Clients[i].Log = "logs/" + v.Clients[i].ID + ".log"
		}
	}
	dir := runFolder(t, r)
	require.NoError(t, Write(r, dir))
	requireLinksResolve(t, dir)
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), `href="vulnerable/logs/client-01.log"`)
}

func TestRerunCommand(t *testing.T) {
	r := &Report{Rerun: "chaoslab run il-0587-zk-treecache-reconnect-storm --seed 7 --variant vulnerable", Backend: "docker",
		Versions: map[string]string{"image zookeeper": "chaoslab/zookeeper:3.8.0-deb12", "image client": "chaoslab/chaoslab:dev", "zookeeper": "3.8.0"}}
	require.Equal(t, "chaoslab run il-0587-zk-treecache-reconnect-storm --seed 7 --variant vulnerable --placement docker --image client=chaoslab/chaoslab:dev --image zookeeper=chaoslab/zookeeper:3.8.0-deb12", rerunCommand(r))
	r.Rerun = rerunCommand(r)
	require.Equal(t, r.Rerun, rerunCommand(r), "completing twice changes nothing")
	auto := &Report{Rerun: "chaoslab run x --seed 1 --backend auto", Backend: "local"}
	require.Equal(t, "chaoslab run x --seed 1 --placement local", rerunCommand(auto))
	sim := &Report{Rerun: "chaoslab sim il-0587 --seed 1", Backend: "sim"}
	require.Equal(t, sim.Rerun, rerunCommand(sim))
}
