package images

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The integration tests build the images (the first time ~8 min on 2
// cores: Consul alone ~4.5 min; run with -timeout 30m) and run containers
// of them. Every container is labelled testLabel and removed in Cleanup.

const testLabel = "org.chaoslab.test=1"

func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (builds images, runs containers): not with -short")
	}
	if _, err := (docker{log: slog.New(slog.DiscardHandler)}).available(context.Background()); err != nil {
		t.Skipf("docker is not available: %v", err)
	}
}

// buildFor builds (or finds up to date) the named images.
func buildFor(t *testing.T, names ...string) []Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	res, err := Build(ctx, Options{Only: names, Progress: testWriter{t}})
	if err != nil {
		t.Fatalf("Build(%v): %v", names, err)
	}
	return res
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// dockerOut runs the docker CLI and returns its output (stdout and stderr).
func dockerOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	return string(out), err
}

// runDetached starts a labelled container (docker run -d --rm) and removes
// it when the test ends, printing its log first if the test failed.
func runDetached(t *testing.T, args ...string) string {
	t.Helper()
	out, err := dockerOut(t, append([]string{"run", "-d", "--label", testLabel}, args...)...)
	if err != nil {
		t.Fatalf("docker run %v: %v\n%s", args, err, out)
	}
	id := strings.TrimSpace(out)
	if i := strings.LastIndexByte(id, '\n'); i >= 0 {
		id = id[i+1:]
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := dockerOut(t, "logs", "--tail", "60", id)
			t.Logf("container %.12s log:\n%s", id, logs)
		}
		dockerOut(t, "rm", "-f", "-v", id)
	})
	return id
}

// hostPort is the 127.0.0.1 address where a container's port is published.
func hostPort(t *testing.T, id, port string) string {
	t.Helper()
	out, err := dockerOut(t, "port", id, port)
	if err != nil {
		t.Fatalf("docker port %s %s: %v\n%s", id, port, err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "127.0.0.1:") {
			return l
		}
	}
	t.Fatalf("port %s of %.12s is not published on 127.0.0.1: %q", port, id, out)
	return ""
}

// fourLetter sends a ZooKeeper four-letter word (as `echo ruok | nc`).
func fourLetter(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

func waitFor(t *testing.T, what string, timeout time.Duration, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, s := f()
		if ok {
			return
		}
		last = s
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last: %s)", what, timeout, last)
}

func TestIntegration_Build(t *testing.T) {
	requireDocker(t)
	start := time.Now()
	res := buildFor(t)
	t.Logf("first Build: %s", time.Since(start).Round(100*time.Millisecond))
	if len(res) != len(Names) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(Names), res)
	}
	for i, r := range res {
		if r.Name != Names[i] || r.Ref != Ref(r.Name) || r.Size <= 0 || r.ID == "" || !strings.Contains(r.Version, "+") {
			t.Errorf("result %+v", r)
		}
		t.Logf("%-9s %-32s %9s built=%v took %s", r.Name, r.Ref, humanSize(r.Size), r.Built, r.Took.Round(100*time.Millisecond))
		out, err := dockerOut(t, "image", "inspect", "--format", `{{index .Config.Labels "org.chaoslab.image"}} {{index .Config.Labels "org.chaoslab.version"}}`, r.Ref)
		if err != nil || strings.TrimSpace(out) != r.Name+" "+r.Version {
			t.Errorf("%s labels: %q %v", r.Ref, out, err)
		}
	}
	// Built again: every image is up to date and skipped, quickly.
	start = time.Now()
	again := buildFor(t)
	took := time.Since(start)
	t.Logf("second Build (all up to date): %s", took.Round(10*time.Millisecond))
	for i, r := range again {
		if r.Built || r.ID != res[i].ID || r.Version != res[i].Version {
			t.Errorf("second build of %s: %+v (first %+v)", r.Name, r, res[i])
		}
	}
	if took > time.Minute {
		t.Errorf("an up-to-date Build took %s", took)
	}
	list, err := List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if slices.Contains(Extra, r.Name) {
			continue // not built here
		}
		if !r.Present || !r.Current || r.Size <= 0 {
			t.Errorf("List: %+v", r)
		}
	}
}

func TestIntegration_ZooKeeperStandalone(t *testing.T) {
	requireDocker(t)
	buildFor(t, "zookeeper")
	id := runDetached(t, "--rm", "-e", "ZOO_MY_ID=1", "-p", "127.0.0.1::2181", "-p", "127.0.0.1::8080", ZooKeeperRef)
	addr := hostPort(t, id, "2181/tcp")
	start := time.Now()
	waitFor(t, "ruok answered imok", 90*time.Second, func() (bool, string) {
		out, err := fourLetter(addr, "ruok")
		return err == nil && out == "imok", fmt.Sprintf("%q %v", out, err)
	})
	t.Logf("ZooKeeper answered imok %s after start", time.Since(start).Round(100*time.Millisecond))
	waitFor(t, "srvr says standalone", 30*time.Second, func() (bool, string) {
		out, err := fourLetter(addr, "srvr")
		return err == nil && strings.Contains(out, "Mode: standalone") && strings.Contains(out, "Zookeeper version: 3.8.0"), out
	})
	// The AdminServer (servlet-api on the classpath) answers on 8080.
	admin := hostPort(t, id, "8080/tcp")
	waitFor(t, "the AdminServer answers", 30*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + admin + "/commands/ruok")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.Contains(string(b), `"command" : "ruok"`), string(b)
	})
	cfg, err := dockerOut(t, "exec", id, "cat", "/conf/zoo.cfg", "/data/myid")
	if err != nil || !strings.Contains(cfg, "dataDir=/data") || !strings.Contains(cfg, "clientPort=2181") || !strings.HasSuffix(cfg, "1\n") {
		t.Errorf("zoo.cfg and myid: %v\n%s", err, cfg)
	}
}

func TestIntegration_ZooKeeperEnsemble(t *testing.T) {
	requireDocker(t)
	buildFor(t, "zookeeper")
	rnd := make([]byte, 4)
	rand.Read(rnd)
	network := "chaoslab-test-" + hex.EncodeToString(rnd)
	if out, err := dockerOut(t, "network", "create", "--label", testLabel, network); err != nil {
		t.Fatalf("docker network create: %v\n%s", err, out)
	}
	t.Cleanup(func() { dockerOut(t, "network", "rm", network) })
	servers := "server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 server.3=zk3:2888:3888;2181"
	var addrs []string
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("zk%d", i)
		id := runDetached(t, "--rm", "--network", network, "--network-alias", name, "--hostname", name,
			"-e", fmt.Sprintf("ZOO_MY_ID=%d", i), "-e", "ZOO_SERVERS="+servers, "-e", "JVMFLAGS=-Xmx128m",
			"-p", "127.0.0.1::2181", ZooKeeperRef)
		addrs = append(addrs, hostPort(t, id, "2181/tcp"))
	}
	start := time.Now()
	waitFor(t, "one leader and two followers", 2*time.Minute, func() (bool, string) {
		modes := map[string]int{}
		var all []string
		for _, a := range addrs {
			out, _ := fourLetter(a, "srvr")
			mode := "?"
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
					mode = m
				}
			}
			modes[mode]++
			all = append(all, mode)
		}
		return modes["leader"] == 1 && modes["follower"] == 2, strings.Join(all, ",")
	})
	t.Logf("3-server ensemble has a leader %s after start", time.Since(start).Round(100*time.Millisecond))
}

func TestIntegration_ZooKeeperImageNamesNoMirror(t *testing.T) {
	requireDocker(t)
	buildFor(t, "zookeeper")
	srcs, err := ReadAptSources("/")
	if err != nil {
		t.Fatal(err)
	}
	m, err := DebianMirrors(srcs, DebianSuite)
	if err != nil {
		t.Skipf("no Debian mirror on this machine to look for: %v", err)
	}
	for _, host := range m.Hosts {
		// grep exits 1 when nothing matches, 2 on an error.
		out, err := dockerOut(t, "run", "--rm", "--label", testLabel, "--entrypoint", "grep", ZooKeeperRef,
			"-rIl", "-e", host, "/etc/apt", "/var/lib/apt", "/var/cache/apt")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("a mirror of this machine is named in the image's APT files (%v):\n%s", err, out)
		}
	}
	out, err := dockerOut(t, "run", "--rm", "--label", testLabel, "--entrypoint", "sh", ZooKeeperRef, "-c",
		"cat /etc/apt/sources.list; ls /etc/apt/sources.list.d; ls /var/lib/apt/lists | grep -v -e '^lock$' -e '^partial$'; true")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("the image has APT sources or lists: %v\n%s", err, out)
	}
}

func TestIntegration_Etcd(t *testing.T) {
	requireDocker(t)
	buildFor(t, "etcd")
	out, err := dockerOut(t, "run", "--rm", "--label", testLabel, EtcdRef, "--version")
	if err != nil || !strings.Contains(out, "etcd Version: 3.6.16") {
		t.Fatalf("etcd --version: %v\n%s", err, out)
	}
	// A member serving clients, and etcdctl in the same image.
	id := runDetached(t, "--rm", EtcdRef, "--name", "e1",
		"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://127.0.0.1:2379")
	waitFor(t, "etcdctl put", time.Minute, func() (bool, string) {
		out, err := dockerOut(t, "exec", id, "/usr/local/bin/etcdctl", "put", "chaoslab", "ok")
		return err == nil && strings.TrimSpace(out) == "OK", out
	})
	out, err = dockerOut(t, "exec", id, "etcdctl", "get", "--print-value-only", "chaoslab")
	if err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("etcdctl get: %v %q", err, out)
	}
	if out, err := dockerOut(t, "exec", id, "etcdutl", "version"); err != nil || !strings.Contains(out, "3.6.16") {
		t.Errorf("etcdutl version: %v %q", err, out)
	}
}

func TestIntegration_Consul(t *testing.T) {
	requireDocker(t)
	buildFor(t, "consul")
	out, err := dockerOut(t, "run", "--rm", "--label", testLabel, ConsulRef, "version")
	if err != nil || !strings.Contains(out, "Consul v1.14.11") {
		t.Fatalf("consul version: %v\n%s", err, out)
	}
	// A server agent with its data in /consul/data elects itself.
	id := runDetached(t, "--rm", "-p", "127.0.0.1::8500", ConsulRef, "agent", "-server", "-bootstrap-expect=1",
		"-data-dir=/consul/data", "-client=0.0.0.0")
	addr := hostPort(t, id, "8500/tcp")
	waitFor(t, "a leader", time.Minute, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/v1/status/leader")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && len(strings.Trim(strings.TrimSpace(string(b)), `"`)) > 0, string(b)
	})
	if out, err := dockerOut(t, "exec", id, "/bin/consul", "kv", "put", "chaoslab", "ok"); err != nil {
		t.Errorf("consul kv put: %v\n%s", err, out)
	}
}

func TestIntegration_Chaoslab(t *testing.T) {
	requireDocker(t)
	res := buildFor(t, "chaoslab")
	out, err := dockerOut(t, "run", "--rm", "--label", testLabel, res[0].Ref, "--help")
	if err != nil || !strings.Contains(out, "chaoslab") || !strings.Contains(out, "images") {
		t.Errorf("chaoslab --help: %v\n%s", err, out)
	}
}
