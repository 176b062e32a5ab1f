package gameday_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chaoslab/chaoslab/harness/gameday"
	"github.com/chaoslab/chaoslab/harness/lab"
)

// repo is a path in the repository.
func repo(parts ...string) string { return filepath.Join(append([]string{"..", ".."}, parts...)...) }

// debianTool finds one of Debian's prometheus package's programs: a test
// without it skips, unless CI=true (where scripts/setup.sh installed it).
func debianTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := fmt.Sprintf("no %s (Debian's prometheus package; scripts/setup.sh installs it)", name)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, v), path)
}

// promConfig is what the tests read of deploy/prometheus/prometheus.yml.
type promConfig struct {
	Global        map[string]any `yaml:"global"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		MetricsPath   string `yaml:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// TestDeployPrometheusConfig: the shipped Prometheus config scrapes the
// route chaoslab serves, on loopback, at the dashboard's default port and
// at the run's address docs/gameday.md gives; promtool accepts it.
func TestDeployPrometheusConfig(t *testing.T) {
	path := repo("deploy", "prometheus", "prometheus.yml")
	var c promConfig
	readYAML(t, path, &c)
	require.Len(t, c.ScrapeConfigs, 1)
	job := c.ScrapeConfigs[0]
	require.Equal(t, "chaoslab", job.JobName, "the dashboard's queries select job=\"chaoslab\"")
	require.Equal(t, gameday.MetricsPath, job.MetricsPath)
	readme, err := os.ReadFile(repo("docs", "gameday.md"))
	require.NoError(t, err)
	var targets []string
	for _, sc := range job.StaticConfigs {
		targets = append(targets, sc.Targets...)
	}
	require.Contains(t, targets, fmt.Sprintf("127.0.0.1:%d", gameday.DefaultPort))
	for _, tg := range targets {
		host, port, err := net.SplitHostPort(tg)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1", host, "chaoslab listens on loopback only")
		if port != fmt.Sprint(gameday.DefaultPort) {
			require.True(t, strings.Contains(string(readme), "--metrics-addr "+tg), "docs/gameday.md gives the run's address Prometheus scrapes, %s", tg)
		}
	}
	if _, err := exec.LookPath("promtool"); err == nil || os.Getenv("CI") == "true" {
		out, err := exec.Command(debianTool(t, "promtool"), "check", "config", path).CombinedOutput()
		require.NoError(t, err, string(out))
		t.Logf("promtool: %s", strings.TrimSpace(string(out)))
	}
}

// compose is what the tests read of docker-compose.yml.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Profiles    []string          `yaml:"profiles"`
		NetworkMode string            `yaml:"network_mode"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
}

// TestDeployComposeMetricsProfile: Prometheus and Grafana are in the
// metrics profile alone, in the host's network (chaoslab's loopback),
// listening on 127.0.0.1, with the files they mount in the repository,
// and Grafana's data source is that Prometheus.
func TestDeployComposeMetricsProfile(t *testing.T) {
	var c compose
	readYAML(t, repo("docker-compose.yml"), &c)
	for name, s := range c.Services {
		if name == "prometheus" || name == "grafana" {
			require.Equal(t, []string{"metrics"}, s.Profiles, name)
			require.Equal(t, "host", s.NetworkMode, name)
			for _, v := range s.Volumes {
				src := strings.Split(v, ":")[0]
				_, err := os.Stat(repo(src))
				require.NoError(t, err, "%s mounts %s", name, src)
			}
			continue
		}
		require.Empty(t, s.Profiles, "%s: the game-day stack starts without a profile", name)
	}
	prom := c.Services["prometheus"]
	require.Contains(t, prom.Image, "prom/prometheus")
	require.Contains(t, prom.Command, "--web.listen-address=127.0.0.1:9090")
	require.Contains(t, prom.Volumes, "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro")
	graf := c.Services["grafana"]
	require.Contains(t, graf.Image, "grafana/grafana")
	require.Equal(t, "127.0.0.1", graf.Environment["GF_SERVER_HTTP_ADDR"])

	var ds struct {
		Datasources []struct{ UID, Type, URL string } `yaml:"datasources"`
	}
	readYAML(t, repo("deploy", "grafana", "provisioning", "datasources", "prometheus.yml"), &ds)
	require.Len(t, ds.Datasources, 1)
	require.Equal(t, "http://127.0.0.1:9090", ds.Datasources[0].URL)
	var prov struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, repo("deploy", "grafana", "provisioning", "dashboards", "chaoslab.yml"), &prov)
	require.Len(t, prov.Providers, 1)
	require.Contains(t, graf.Volumes, "./deploy/grafana/dashboards:"+prov.Providers[0].Options.Path+":ro")

	for _, cmd := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		if exec.Command(cmd[0], append(cmd[1:], "version")...).Run() != nil {
			continue // not here (docker without its compose plug-in)
		}
		args := append(cmd[1:], "--profile", "metrics", "config", "--quiet")
		out, err := exec.Command(cmd[0], args...).CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(cmd, " "), out)
		t.Logf("%s --profile metrics config: valid", strings.Join(cmd, " "))
		break
	}
}

// dashboard is what the tests read of the provisioned Grafana dashboard.
type dashboard struct {
	Panels []struct {
		Title      string `json:"title"`
		Repeat     string `json:"repeat"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(repo("deploy", "grafana", "dashboards", "chaoslab.json"))
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// dashboardQueries are the dashboard's queries with its variables set
// (variant: the one given; metric: every chaoslab series).
func dashboardQueries(t *testing.T, variant string) map[string]string {
	q := map[string]string{}
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			q[p.Title] = strings.NewReplacer("$variant", variant, "$metric", gameday.MetricPrefix+".+").Replace(tg.Expr)
		}
	}
	return q
}

var metricRef = regexp.MustCompile(gameday.MetricPrefix + `[a-zA-Z0-9_]+`)

// TestDeployGrafanaDashboard: every metric the dashboard names is one the
// exposition makes of a series a registered system or workload declares.
func TestDeployGrafanaDashboard(t *testing.T) {
	declared := map[string]bool{}
	var defs []lab.SeriesDef
	for _, n := range lab.SystemNames() {
		s, _ := lab.GetSystem(n)
		defs = append(defs, s.Series()...)
	}
	for _, n := range lab.KindNames() {
		k, _ := lab.GetKind(n)
		defs = append(defs, k.Series()...)
	}
	for _, d := range append(defs, lab.PipelineSeries()...) {
		declared[gameday.MetricName(d.Name)] = true
	}
	d := readDashboard(t)
	require.NotEmpty(t, d.Panels)
	var named []string
	repeated := false
	for _, p := range d.Panels {
		if len(p.Targets) > 0 {
			require.Equal(t, "chaoslab-prometheus", p.Datasource.UID, p.Title)
		}
		repeated = repeated || p.Repeat == "metric"
		for _, tg := range p.Targets {
			require.Contains(t, tg.Expr, `job="chaoslab"`, p.Title)
			named = append(named, metricRef.FindAllString(tg.Expr, -1)...)
		}
	}
	require.True(t, repeated, "a panel repeated for every chaoslab series")
	require.NotEmpty(t, named)
	for _, m := range slices.Compact(slices.Sorted(slices.Values(named))) {
		require.True(t, declared[m], "the dashboard queries %s, which no registered plug-in's series makes", m)
	}
}
